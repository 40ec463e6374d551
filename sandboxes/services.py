"""A job's sandbox files: stored with the submission (input), staged by the job's pilot and
shown once its final report arrives (stdout, stderr, output), deleted with the job or when
older than SandboxRetentionDays.

Files are written through Django's storage `sandboxes` at paths made of the job's id and a
random token; the name a user or pilot gave is only a column, checked first. A write whose
transaction rolls back is undone here (the storage is not transactional); a deletion waits for
its transaction's commit.
"""

from __future__ import annotations

import codecs
import hashlib
import posixpath
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.storage import storages
from django.db import transaction

from core import clock, gdpconfig
from matcher import services as job_services
from matcher.filenames import plain_name_problem, relative_path_problem
from matcher.models import Job
from sandboxes.models import SandboxFile, SandboxKind
from sandboxes.uploads import sent_name

OUTPUT_KINDS = (SandboxKind.STDOUT, SandboxKind.STDERR, SandboxKind.OUTPUT)


class SandboxError(Exception):
    """A request's files refused: `field` names the part, `status` is 400 or 413."""

    def __init__(self, field: str, message: str, status: int = 400):
        super().__init__(message)
        self.field, self.message, self.status = field, message, status


def storage():
    return storages["sandboxes"]


def _path(job_id: int) -> str:
    return f"{job_id % 1000:03d}/{job_id}/{secrets.token_hex(16)}"


def _digest(upload) -> str:
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return digest.hexdigest()


def _save(job_id: int, upload, written: list[str]) -> tuple[str, str]:
    """(storage name, sha256) of the upload, written; its name appended to `written`."""
    sha = _digest(upload)
    # A plain File: the storage copies the bytes (a temporary upload is never moved away,
    # so that a retried transaction can write it again).
    name = storage().save(_path(job_id), File(upload.file))
    written.append(name)
    return name, sha


def delete_stored(names: Iterable[str]) -> None:
    store = storage()
    for name in names:
        try:
            store.delete(name)
        except OSError:
            pass  # already gone


def delete_on_commit(names: Sequence[str]) -> None:
    if names:
        names = list(names)
        transaction.on_commit(lambda: delete_stored(names))


# --- input sandboxes ---------------------------------------------------------------------------


def check_inputs(files: Sequence) -> None:
    """The submission's input files within the bounds: plain, distinct names, at most
    MaxInputSandboxFiles of them, MaxInputSandboxBytes together (413 when over)."""
    limit = gdpconfig.get("MaxInputSandboxFiles")
    if len(files) > limit:
        raise SandboxError(
            "input_sandbox",
            f"{len(files)} files; at most {limit} (the MaxInputSandboxFiles parameter)",
        )
    seen: set[str] = set()
    for upload in files:
        name = sent_name(upload)
        problem = plain_name_problem(name)
        if problem:
            raise SandboxError("input_sandbox", f"file name {problem}")
        if name in seen:
            raise SandboxError("input_sandbox", f"two files are named {name!r}")
        seen.add(name)
    check_input_bytes(sum(upload.size for upload in files))


def check_input_bytes(total: int) -> None:
    if total > gdpconfig.get("MaxInputSandboxBytes"):
        raise SandboxError("input_sandbox", input_over_limit(total), status=413)


def submit_with_inputs(user, spec: dict, files: Sequence) -> list[Job]:
    """The job (matcher's submission) and its input files, in one transaction: on any error
    nothing is left, neither rows nor files. `files` checked by check_inputs first."""
    written: list[str] = []

    def store(jobs: list[Job]) -> None:
        delete_stored(written)  # a retried transaction: the last attempt's files
        written.clear()
        now = clock.now()
        for job in jobs:
            for upload in files:
                name, sha = _save(job.pk, upload, written)
                SandboxFile.objects.create(
                    job=job,
                    kind=SandboxKind.INPUT,
                    name=sent_name(upload),
                    size=upload.size,
                    sha256=sha,
                    file=name,
                    complete=True,
                    created=now,
                )

    try:
        return job_services.submit_jobs(user, [spec], after_insert=store if files else None)
    except BaseException:
        delete_stored(written)
        raise


def submit_job_with_files(user, spec: dict, files: Sequence) -> list[Job]:
    """One job and its input sandbox files (none: a plain submission), as the web form submits
    it: the API's bounds, a refusal as a ValidationError naming the field."""
    if not files:
        return job_services.submit_jobs(user, [spec])
    try:
        check_inputs(files)
    except SandboxError as exc:
        raise ValidationError({exc.field: [exc.message]}) from None
    return submit_with_inputs(user, spec, files)


def input_manifest(job_id: int) -> list[dict]:
    """[{"name", "size", "sha256"}] of the job's input files, by name."""
    return list(
        SandboxFile.objects.filter(job_id=job_id, kind=SandboxKind.INPUT)
        .order_by("name")
        .values("name", "size", "sha256")
    )


def input_file(job_id: int, name: str) -> SandboxFile | None:
    return SandboxFile.objects.filter(job_id=job_id, kind=SandboxKind.INPUT, name=name).first()


# --- output sandboxes --------------------------------------------------------------------------


@dataclass
class Part:
    kind: str  # stdout | stderr | output
    upload: object  # an UploadedFile


def output_name(part: Part) -> str:
    """The part's file name as it is kept: a normalised relative path inside the working
    directory; SandboxError naming the part otherwise."""
    raw = sent_name(part.upload).replace("\\", "/")
    problem = relative_path_problem(raw)  # control and formatting characters too
    if problem is None:
        name = posixpath.normpath(raw)
        if name in (".", "") or len(name) > 1024:
            problem = f"{raw!r} is not a file name"
    if problem:
        raise SandboxError(part.kind, f"file name {problem}")
    return name


# Room for an upload's own bytes (boundaries, part headers, the reference) over its files.
FORM_SLACK = 1024 * 1024


def output_budget() -> int:
    """The most bytes a job's outputs may upload together: MaxOutputSandboxBytes, and within
    what the web server takes of one upload (settings.UPLOAD_MAX_BYTES) with room for the form."""
    limit = gdpconfig.get("MaxOutputSandboxBytes")
    server = getattr(settings, "UPLOAD_MAX_BYTES", None)
    return limit if server is None else max(0, min(limit, server - FORM_SLACK))


def output_over_limit(total: int) -> str:
    return f"{total} bytes; at most {output_budget()} (the MaxOutputSandboxBytes parameter)"


def input_over_limit(total: int) -> str:
    limit = gdpconfig.get("MaxInputSandboxBytes")
    return f"{total} bytes; at most {limit} (the MaxInputSandboxBytes parameter)"


def check_output_bytes(total: int) -> None:
    if total > output_budget():
        raise SandboxError("output", output_over_limit(total), status=413)


def stage_outputs(job_id: int, parts: Sequence[Part]) -> list[SandboxFile]:
    """A pilot's upload of the job's stdout, stderr and output files: checked (names, at
    most one stdout and one stderr, MaxOutputSandboxBytes together), then stored, not yet
    shown (complete=False). An earlier upload not yet shown is replaced."""
    named = []
    for part in parts:
        named.append((part, output_name(part)))
    for kind in (SandboxKind.STDOUT, SandboxKind.STDERR):
        if sum(1 for p in parts if p.kind == kind) > 1:
            raise SandboxError(kind, f"one {kind} file at most")
    names = [name for part, name in named if part.kind == SandboxKind.OUTPUT]
    if len(set(names)) != len(names):
        raise SandboxError("output", "two output files have one name")
    check_output_bytes(sum(p.upload.size for p in parts))
    written: list[str] = []
    try:
        with transaction.atomic():
            old = SandboxFile.objects.filter(job_id=job_id, kind__in=OUTPUT_KINDS, complete=False)
            delete_on_commit(list(old.values_list("file", flat=True)))
            old.delete()
            now, rows = clock.now(), []
            for part, name in named:
                stored, sha = _save(job_id, part.upload, written)
                rows.append(
                    SandboxFile(
                        job_id=job_id,
                        kind=part.kind,
                        name=name,
                        size=part.upload.size,
                        sha256=sha,
                        file=stored,
                        complete=False,
                        created=now,
                    )
                )
            SandboxFile.objects.bulk_create(rows)
    except BaseException:
        delete_stored(written)
        raise
    return rows


def complete_outputs(job_id: int) -> int:
    """The job's pilot made its final report: its staged files are shown from now on (any
    shown before, from an earlier run, go). Call in the report's transaction."""
    staged = SandboxFile.objects.filter(job_id=job_id, kind__in=OUTPUT_KINDS, complete=False)
    if not staged.exists():
        return 0
    older = SandboxFile.objects.filter(job_id=job_id, kind__in=OUTPUT_KINDS, complete=True)
    delete_on_commit(list(older.values_list("file", flat=True)))
    older.delete()
    return staged.update(complete=True)


def outputs(job_id: int) -> list[SandboxFile]:
    """The job's shown output files: stdout, stderr, then the output files by name."""
    order = {kind: n for n, kind in enumerate(OUTPUT_KINDS)}
    files = SandboxFile.objects.filter(job_id=job_id, kind__in=OUTPUT_KINDS, complete=True)
    return sorted(files, key=lambda f: (order[f.kind], f.name))


def output_file(job_id: int, name: str) -> SandboxFile | None:
    for f in outputs(job_id):
        if f.name == name:
            return f
    return None


def stream_file(job_id: int, kind: str) -> SandboxFile | None:
    return SandboxFile.objects.filter(job_id=job_id, kind=kind, complete=True).first()


def read_text(entry: SandboxFile) -> str:
    with storage().open(entry.file.name, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


# Bytes read at a time from a stored stream: a log of any size costs one chunk of memory.
CHUNK = 64 * 1024


class TextStream:
    """A stored stdout or stderr as UTF-8 text (undecodable bytes replaced), read a chunk at a
    time from `start`; closed by the response once sent, or if the client goes away."""

    def __init__(self, handle, start: int):
        self.handle, self.start = handle, start

    def __iter__(self):
        self.handle.seek(self.start)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while chunk := self.handle.read(CHUNK):
            yield decoder.decode(chunk).encode()
        yield decoder.decode(b"", final=True).encode()

    def close(self) -> None:
        self.handle.close()


def open_text(entry: SandboxFile, lines: int | None = None) -> TextStream:
    """The file as text to stream: whole, or its last `lines` lines, found by reading back
    from the end (a tail costs what it returns, not the file's size)."""
    handle = storage().open(entry.file.name, "rb")
    try:
        start = 0 if lines is None else _tail_start(handle, lines)
    except BaseException:
        handle.close()
        raise
    return TextStream(handle, start)


def _tail_start(handle, lines: int) -> int:
    """The offset where the last `lines` lines of the file begin (as str.splitlines counts
    them at line feeds: a final one ends the last line, it opens no empty one)."""
    handle.seek(0, 2)
    pos = size = handle.tell()
    if lines <= 0:
        return size
    found = 0
    while pos > 0:
        start = max(0, pos - CHUNK)
        handle.seek(start)
        chunk = handle.read(pos - start)
        end = min(len(chunk), size - 1 - start)  # the file's last byte never opens a line
        while (i := chunk.rfind(b"\n", 0, end)) >= 0:
            found += 1
            if found == lines:
                return start + i + 1
            end = i
        pos = start
    return 0


def read_tail(entry: SandboxFile, max_bytes: int) -> tuple[str, bool]:
    """The file's last `max_bytes` at most, from a line start when cut (a page shows it; the
    whole file downloads): (text, whether it was cut)."""
    with storage().open(entry.file.name, "rb") as handle:
        cut = entry.size > max_bytes
        if cut:
            handle.seek(entry.size - max_bytes)
        data = handle.read(max_bytes)
    if cut and b"\n" in data:
        data = data[data.index(b"\n") + 1 :]
    return data.decode("utf-8", "replace"), cut


# --- deletion ----------------------------------------------------------------------------------


def delete_job_files(job_ids: Sequence[int]) -> int:
    """Delete the files (and rows) of these jobs, the files once the transaction commits."""
    rows = SandboxFile.objects.filter(job_id__in=list(job_ids))
    delete_on_commit(list(rows.values_list("file", flat=True)))
    return rows.delete()[0]


def delete_files(ids: Sequence[int]) -> int:
    """Delete these sandbox files (rows now, stored files at the commit)."""
    rows = SandboxFile.objects.filter(pk__in=list(ids))
    delete_on_commit(list(rows.values_list("file", flat=True)))
    return rows.delete()[0]


def stored_names_of_jobs(job_ids: Sequence[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for job_id, name in SandboxFile.objects.filter(job_id__in=list(job_ids)).values_list(
        "job_id", "file"
    ):
        out.setdefault(job_id, []).append(name)
    return out


def purge_jobs(ids: Sequence[int]) -> list[int]:
    """The retention cycle's jobs: matcher's purge, then their sandbox files (the rows went
    with the jobs; the stored files once the transaction commits)."""
    names = stored_names_of_jobs(ids)
    gone = job_services.purge_jobs(ids)
    delete_on_commit([name for job_id in gone for name in names.get(job_id, [])])
    return gone
