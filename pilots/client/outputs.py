"""The payload's outputs go up: stdout, stderr and the output sandbox's files in one streamed
multipart POST, within the server's limit. Standard library only.

Nothing a job wrote is lost silently. When the outputs are over the limit the match answer
gives (`max_output_bytes`, the server's MaxOutputSandboxBytes), the pilot cuts them first
(`sandbox.fit_outputs`): stdout and stderr keep their head and tail, a line saying where and
how much was cut between them; the output files that fit go whole, the others are left out.
A server that still answers 413 with a smaller `limit` (its parameter changed meanwhile) gets
one more, smaller upload. What was cut or left out, or why nothing went up, is `truncated`:
the final report's `output_truncated`, shown with the job.
"""

from __future__ import annotations

import os
import tempfile
import urllib.parse
from dataclasses import dataclass, field

from .sandbox import cut_copy, fit_outputs, inside, output_files
from .transport import Client, FilePart

LIMIT_NAME = "MaxOutputSandboxBytes"
TRUNCATED_CHARS = 1024


@dataclass
class Uploaded:
    """What the upload did: the names that went up, what went wrong (the report's reason
    says it), and what was cut or left out (empty: everything is there)."""

    names: list[str] = field(default_factory=list)
    problem: str | None = None
    truncated: str = ""


@dataclass(frozen=True)
class _Output:
    part: str  # stdout | stderr | output
    name: str
    path: str
    size: int


def human(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def upload_outputs(
    client: Client, path: str, reference: str, payload, workdir: str, options
) -> Uploaded:
    """Upload stdout, stderr and the output sandbox's files (cut to the limit when over it)."""
    outputs = []
    streams = [("stdout", payload.stdout_name)]
    if payload.stderr_name != payload.stdout_name:
        streams.append(("stderr", payload.stderr_name))
    for part, name in streams:
        full = os.path.join(workdir, name)
        if os.path.isfile(full) and inside(workdir, full):
            outputs.append(_Output(part, name, full, os.path.getsize(full)))
    skip = {payload.stdout_name, payload.stderr_name}
    for rel in output_files(workdir, payload.output_sandbox, skip, options.log):
        full = os.path.join(workdir, rel)
        outputs.append(_Output("output", rel.replace(os.sep, "/"), full, os.path.getsize(full)))
    # Query string: the server checks the reference before it takes the body.
    url = f"{path}/output/?{urllib.parse.urlencode({'pilot_reference': reference})}"
    budget = payload.max_output_bytes
    with tempfile.TemporaryDirectory(prefix="gridwms-cut-", dir=os.path.dirname(workdir)) as tmp:
        for _attempt in range(2):
            parts, truncated = _within(outputs, budget, tmp)
            try:
                code, answer = client.post_multipart(url, [("pilot_reference", reference)], parts)
            except OSError as exc:
                options.log(f"{path}: the output sandbox upload failed: {exc}")
                problem = f"output sandbox not uploaded: {exc}"
                return Uploaded([], problem, _clip(problem))
            limit = answer.get("limit")
            known = budget if budget is not None else 2**63
            smaller = isinstance(limit, int) and 0 <= limit < known
            if code == 413 and smaller:
                options.log(f"{path}: the server's limit is {limit} bytes; cutting to it")
                budget = limit
                continue
            break
    if code != 200:
        options.log(f"{path}: the output sandbox upload was answered {code} {answer}")
        problem = f"output sandbox refused ({code})"
        return Uploaded([], problem, _clip(f"{problem}: {_detail(answer)}"))
    if truncated:
        options.log(f"{path}: {truncated}")
    return Uploaded([p.filename for p in parts], None, truncated)


def _within(outputs: list[_Output], budget: int | None, tmp: str) -> tuple[list[FilePart], str]:
    """The parts to upload within `budget` bytes (None: no known limit), cut copies written in
    `tmp`, and what was cut or left out."""
    if budget is None:
        return [FilePart(o.part, o.name, o.path) for o in outputs], ""
    streams = [o for o in outputs if o.part != "output"]
    files = [o for o in outputs if o.part == "output"]
    keep, left_out = fit_outputs(
        [(o.part, o.size) for o in streams], [(o.name, o.size) for o in files], budget
    )
    parts, said = [], []
    for o in streams:
        if keep[o.part] >= o.size:
            parts.append(FilePart(o.part, o.name, o.path))
            continue
        copy = os.path.join(tmp, o.part)
        kept = cut_copy(o.path, copy, o.size, keep[o.part], LIMIT_NAME)
        parts.append(FilePart(o.part, o.name, copy))
        said.append(f"{o.part} {o.name} cut to its head and tail, {human(kept)} of {human(o.size)}")
    gone = set(left_out)
    parts += [FilePart(o.part, o.name, o.path) for o in files if o.name not in gone]
    left = [f"{o.name} ({human(o.size)})" for o in files if o.name in gone]
    if left:
        said.append("left out: " + ", ".join(left))
    if not said:
        return parts, ""
    return parts, _clip(f"over {LIMIT_NAME} ({human(budget)}): " + "; ".join(said))


def _detail(answer: dict) -> str:
    for value in answer.values():
        if isinstance(value, list) and value:
            return str(value[0])
        if isinstance(value, str):
            return value
    return "no detail"


def _clip(text: str) -> str:
    return text if len(text) <= TRUNCATED_CHARS else text[: TRUNCATED_CHARS - 1] + "…"
