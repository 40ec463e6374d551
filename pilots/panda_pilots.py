"""PanDA's own pilot as a gridwms pilot: the "panda" submit pools' backend, and the launcher that
runs one real pilot (panda-pilot, .clients/panda-pilot/) against a gridwms server and, when it
has exited, ingests what it left on the worker node (docs/operator-guide.md, PanDA's pilot).

The pilot speaks PanDA's protocol (api/panda_pilot/): getJob claims a job through the native
match, updateJob moves it along the native reports. It does not upload its log: it moves the
log tarball into its output directory, declares its size and adler32 in its final updateJob
(recorded as a PandaLogReport), and the launcher stores the tarball with the job's outputs
(sandboxes) only when the file it finds agrees, with the payload's stdout and stderr read out
of it. A pilot that ended holding its job (it died, or was stopped) fails it as a pilot
failure: the job is rescheduled, or fails at MaxRescheduling, never left waiting on it.

`run_pilot(url, token, queue)` is the reusable entry: it returns when the pilot has exited."""

from __future__ import annotations

import random
import shutil
import sys
import tarfile
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.core.files import File
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from brokerage.models import PandaQueue
from core import clock, gdpconfig
from matcher.lifecycle import CLAIMED_STATES
from matcher.models import Job, JobStatus
from matcher.services import jobs as job_moves
from pilots import local_pilots, services
from pilots import panda_launch as launch
from pilots.models import PandaLogReport, Pilot, PilotStatus
from pilots.submit_pools import ROOT, Backend, PilotBatch, Submitted
from sandboxes import services as sandboxes

GRID_TYPE = "PanDA"
STORED = "stored"
# The payload's own output, inside the log tarball (the pilot's [Payload] file names).
PAYLOAD_STREAMS = (("payload.stdout", "stdout"), ("payload.stderr", "stderr"))
MAX_STREAM_BYTES = 16 * 1024 * 1024


@dataclass
class PilotRun:
    """What one pilot did: its exit code, its pilot record, the jobs it claimed, and what
    became of each job's log (STORED, or why not)."""

    reference: str
    exit_code: int
    pilot_id: int | None = None
    logs: dict[int, str] = field(default_factory=dict)
    output: Path | None = None  # the pilot's own stdout and stderr
    workdir: Path | None = None


def record_log_report(job_id: int, pilot_id: int | None, name: str, entry: dict) -> None:
    """The log file the pilot's final updateJob declared (updateJob's `xml`)."""
    PandaLogReport.objects.create(
        job_id=job_id,
        pilot_id=pilot_id,
        name=name,
        guid=entry.get("guid", ""),
        size=entry["fsize"],
        adler32=entry["adler32"],
        reported=clock.now(),
    )


# --- the launcher --------------------------------------------------------------------------------


def run_pilot(
    url: str,
    token: str,
    queue: str,
    *,
    reference: str = "",
    lifetime: int = 600,
    timeout: float | None = None,
    heartbeat: int = 60,
    label: str = "user",
    workdir: Path | None = None,
    keep_workdir: bool = False,
) -> PilotRun:
    """Run one real PanDA pilot for PanDA queue `queue` against the gridwms at `url`
    (scheme://host:port) with the API credential `token` (an API token key or a JWT: it is
    sent as `Authorization: Bearer`), and return when it has exited, its log ingested. The
    pilot asks for one job; `reference` is its pilot record's (HARVESTER_WORKER_ID: the
    director's, or a new one). `timeout`: seconds after which it and its payload are stopped;
    `heartbeat`: seconds between its updateJob heartbeats (a kill reaches it with one)."""
    reference = reference or f"panda://{queue}/{uuid.uuid4().hex[:12]}"
    server = launch.Server(url, token)
    owner = launch.pilot_account()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="gridwms-panda-pilot-"))
    output = local_pilots.log_path(reference)
    pilot_id = _pilot_id(token, reference)
    try:
        launch.prepare(workdir, server, queue, heartbeat, owner)
        process = launch.start(
            launch.command(server, queue, workdir, lifetime, label),
            launch.environment(workdir, reference),
            workdir,
            output,
            owner,
        )
        _set_status(pilot_id, PilotStatus.RUNNING, f"PanDA pilot started at {queue}")
        if not connection.in_atomic_block:
            connection.close()  # not held for the pilot's hours: opened again after
        code = launch.wait(process, timeout)
        left = launch.end_leftovers(reference, workdir)
    except launch.LaunchError as exc:
        _append(output, f"gridwms: the PanDA pilot was not started: {exc}")
        _set_status(pilot_id, PilotStatus.ABORTED, f"not started: {exc}")
        return PilotRun(reference, -1, pilot_id, output=output, workdir=workdir)
    if left:
        _append(output, f"gridwms: {left} process(es) the pilot left behind were killed")
    _append(output, f"{local_pilots.EXIT_LINE}{code}")
    run = PilotRun(
        reference, code, pilot_id or _pilot_id(token, reference), output=output, workdir=workdir
    )
    if run.pilot_id is not None:
        run.logs = ingest(run.pilot_id, workdir, code)
        done = PilotStatus.DONE if code == 0 else PilotStatus.FAILED
        _set_status(run.pilot_id, done, f"PanDA pilot exited with code {code}")
    if not keep_workdir:
        _remove(workdir)
    return run


def _pilot_id(token: str, reference: str) -> int | None:
    """The pilot record this reference names for the token's user (an API token key), else
    the one record with that reference (a JWT's user is the API's to read)."""
    from rest_framework.authtoken.models import Token

    user_id = Token.objects.filter(key=token).values_list("user_id", flat=True).first()
    pilots = Pilot.objects.filter(reference=reference)
    if user_id is not None:
        pilots = pilots.filter(credential_user_id=user_id)
    found = list(pilots.values_list("pk", flat=True)[:2])
    return found[0] if len(found) == 1 else None


def _set_status(pilot_id: int | None, to: str, reason: str) -> None:
    if pilot_id is None:
        return
    try:
        services.set_pilot_status(pilot_id, to, reason)
    except services.PilotError:
        pass  # it ended meanwhile (the director, an operator)


def _append(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line + "\n")


def _remove(workdir: Path) -> None:
    shutil.rmtree(workdir, ignore_errors=True)


# --- after the pilot ------------------------------------------------------------------------------


def ingest(pilot_id: int, workdir: Path, exit_code: int) -> dict[int, str]:
    """For each job the pilot claimed: end what it left held (a pilot failure), acknowledge a
    kill it did not, then store its log if the final report declared one: {job id: outcome}."""
    out = {}
    for job in Job.objects.filter(pilot_id=pilot_id).only("status", "kill_requested"):
        _end_what_it_held(job, pilot_id, exit_code)
        report = PandaLogReport.objects.filter(job_id=job.pk, pilot_id=pilot_id).first()
        if report is not None:
            out[job.pk] = store_log(report, workdir / "out")
    return out


def _end_what_it_held(job: Job, pilot_id: int, exit_code: int) -> None:
    try:
        if job.status in CLAIMED_STATES:
            job_moves.report_pilot_failure(
                job.pk, f"the PanDA pilot exited (code {exit_code}) without ending it", pilot_id
            )
        elif job.status == JobStatus.CANCELLED and job.kill_requested:
            services.report_job(job.pk, JobStatus.CANCELLED, "", pilot_id, {})
    except (job_moves.NotHeld, job_moves.MoveRefused, services.PilotError):
        pass  # moved meanwhile: nothing left to end


def find_log(out_dir: Path, name: str) -> Path | None:
    """The tarball the pilot moved into its output directory (at a Rucio-style path)."""
    found = [p for p in out_dir.rglob(name) if p.is_file()] if out_dir.is_dir() else []
    return found[0] if len(found) == 1 else None


def store_log(report: PandaLogReport, out_dir: Path) -> str:
    """Keep the declared log with the job's outputs when the file agrees with the report
    (size and adler32), and the payload's stdout and stderr out of it; the outcome is
    recorded on the report."""
    path = find_log(out_dir, report.name)
    if path is None:
        outcome = f"no file {report.name} in the pilot's output directory"
    else:
        size, adler = path.stat().st_size, launch.adler32_of_file(path)
        if (size, adler) != (report.size, report.adler32):
            outcome = (
                f"{report.name} is {size} bytes, adler32 {adler}; the pilot declared "
                f"{report.size} bytes, adler32 {report.adler32}: not stored"
            )
        else:
            outcome = _store(report.job_id, report.name, path)
    PandaLogReport.objects.filter(pk=report.pk).update(outcome=outcome[:255])
    return outcome


def _store(job_id: int, name: str, path: Path) -> str:
    job = Job.objects.only("stdout_name", "stderr_name").get(pk=job_id)
    names = {"stdout": job.stdout_name, "stderr": job.stderr_name}
    try:
        with path.open("rb") as tarball, transaction.atomic():
            parts = [sandboxes.Part("output", File(tarball, name=name))]
            for kind, content in payload_streams(path).items():
                parts.append(sandboxes.Part(kind, SimpleUploadedFile(names[kind], content)))
            sandboxes.stage_outputs(job_id, parts)
            sandboxes.complete_outputs(job_id)
    except sandboxes.SandboxError as exc:
        return f"not stored: {exc.message}"
    return STORED


def payload_streams(path: Path) -> dict[str, bytes]:
    """payload.stdout and payload.stderr out of the pilot's log tarball, when there."""
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar.getmembers():
                for file_name, kind in PAYLOAD_STREAMS:
                    if member.isfile() and member.name.rsplit("/", 1)[-1] == file_name:
                        handle = tar.extractfile(member)
                        if handle is not None and kind not in out:
                            out[kind] = handle.read(MAX_STREAM_BYTES)
    except (tarfile.TarError, OSError):
        return {}
    return out


# --- the submit pool's backend --------------------------------------------------------------------


class PandaBackend(Backend):
    """The "panda" pools: a real PanDA pilot on this machine for each pilot of a batch, at a
    CE of the batch's list that some PanDA queue serves (the pilot's --queue), started by
    `manage.py panda_pilot`, which runs it and ingests its log when it exits."""

    grid_type = GRID_TYPE
    logs_in = True

    def __init__(self) -> None:
        self.pending: list[tuple[list[str], str]] = []

    def submit(self, batch: PilotBatch, rng: random.Random) -> list[Submitted]:
        if not (launch.PILOT_DIR / "pilot.py").exists():
            return []  # PanDA's pilot is not installed here (scripts/install_clients.sh)
        queues = queues_of_ces([ce for _, ce in batch.ces])
        choices = [(site, ce) for site, ce in batch.ces if ce in queues]
        out = []
        for _ in range(batch.n if choices else 0):
            site, ce = rng.choice(choices)
            ref = f"panda://{ce}/{uuid.uuid4().hex[:12]}"
            self.pending.append((self.arguments(batch.token, queues[ce], ref), ref))
            out.append(Submitted(ref, site, ce))
        return out

    @staticmethod
    def arguments(token: str, queue: str, reference: str) -> list[str]:
        return [
            sys.executable,
            str(ROOT / "manage.py"),
            "panda_pilot",
            "--url",
            gdpconfig.get("LocalPilotURL"),
            "--token",
            token,
            "--queue",
            queue,
            "--reference",
            reference,
            "--lifetime",
            str(gdpconfig.get("LocalPilotMaxSeconds")),
        ]

    def start(self) -> None:
        """The launchers start once the director has recorded their pilots."""
        pending, self.pending = self.pending, []
        for args, ref in pending:
            local_pilots.launch(args, f"{ref}-launcher", ROOT)


def queues_of_ces(ces: list[str]) -> dict[str, str]:
    """The PanDA queue serving each of these CEs (the first by name where several do)."""
    out: dict[str, str] = {}
    rows = PandaQueue.objects.filter(computing_element__name__in=ces).exclude(
        status=PandaQueue.Status.OFFLINE
    )
    for name, ce in rows.order_by("name").values_list("name", "computing_element__name"):
        out.setdefault(ce, name)
    return out
