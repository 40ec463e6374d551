"""The job page's sandbox facts: its input files and the output files to download (the
job page shows it: web.matcher.selectors.JOB_FACTS)."""

from __future__ import annotations

import shlex
from urllib.parse import quote

from matcher.models import Job
from sandboxes import services
from sandboxes.models import SandboxKind

PAGE_LOG_BYTES = 64 * 1024  # the page shows the end of stdout and stderr; the rest downloads


def _logs(job: Job) -> list[dict]:
    """The final stdout and stderr, each its last PAGE_LOG_BYTES, once the pilot's final report
    has made them visible."""
    out = []
    for kind, name in ((SandboxKind.STDOUT, "stdout"), (SandboxKind.STDERR, "stderr")):
        entry = services.stream_file(job.pk, kind)
        if entry is not None:
            text, cut = services.read_tail(entry, PAGE_LOG_BYTES)
            url = f"/api/v1/jobs/{job.pk}/sandbox/{quote(entry.name)}"
            out.append({"stream": name, "text": text, "cut": cut, "size": entry.size, "url": url})
    return out


def sandbox_facts(user, job: Job) -> dict:
    """The page is shown only to those who may see the job: its files with it."""
    if not job.executable:
        return {}
    return {
        "logs": _logs(job),
        "command_line": shlex.join([job.executable, *job.arguments]) if job.executable else "",
        "sandbox_inputs": services.input_manifest(job.pk),
        "sandbox_outputs": [
            {
                "name": f.name,
                "kind": f.kind,
                "size": f.size,
                "url": f"/api/v1/jobs/{job.pk}/sandbox/{quote(f.name)}",
            }
            for f in services.outputs(job.pk)
        ],
    }
