"""The job page's sandbox facts: its input files and the output files to download (the
matcher's page shows what apps above it register: matcher.selectors.register_job_facts)."""

from __future__ import annotations

import shlex
from urllib.parse import quote

from matcher.models import Job
from matcher.selectors import register_job_facts
from sandboxes import services


@register_job_facts
def sandbox_facts(user, job: Job) -> dict:
    """The page is shown only to those who may see the job: its files with it."""
    return {
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
