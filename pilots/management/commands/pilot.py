"""The real pilot client: talks to gridwms over HTTP with the standard library only.

It registers itself, presents its resource description to /api/v1/match/, reports each job
starting and running, sends heartbeats while the payload runs, reports the job finished or
failed, and asks again until no job fits or its time is up.

It tells the truth about its time: each match request offers the CPU time it has left (the
lesser of --cpu-time and its lifetime, --max-seconds, less the time elapsed), so that it is
given only jobs whose CPU time it can cover. A job it must stop because its own lifetime ends
is a pilot failure, not the job's: it is reported failed with `pilot_failure` (the server
reschedules it), and the pilot ends Failed, saying which jobs it lost so.

A job whose match answer carries a `payload` (an executable, its sandboxes, its limit) is run
by pilots/client/payload.py, which imports nothing of Django (this command is only its entry
point): inputs downloaded, the executable run in a fresh working directory under --workdir,
heartbeats with its output tail, killed past its wall-clock limit or on request, its outputs
uploaded and its exit code and resource use reported. A job without one is run as before: a
bounded sleep (CPUTime x --cpu-scale), or the one fixed --command.
"""

from __future__ import annotations

import shlex
import subprocess
import time
import uuid

from django.core.management.base import BaseCommand, CommandError

from pilots.client import logbook
from pilots.client import payload as payloads
from pilots.client.transport import Client

__all__ = ["Client", "Command"]

DONE, FAILED, LOST = "done", "failed", "lost"
LIFETIME_ENDED = payloads.LIFETIME_ENDED


class Command(BaseCommand):
    help = "Run a pilot: ask gridwms for jobs over HTTP and run them."

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True, help="e.g. http://127.0.0.1:8000")
        parser.add_argument("--token", required=True, help="the pilot credential's API token")
        parser.add_argument("--site", required=True)
        parser.add_argument("--ce", default="")
        parser.add_argument("--reference", default="", help="default: a new unique one")
        parser.add_argument(
            "--cpu-time",
            type=int,
            default=86400,
            help="the CE's CPU time limit: the pilot offers the lesser of this and its time left",
        )
        parser.add_argument("--platform", action="append", default=[])
        parser.add_argument("--tag", action="append", default=[])
        parser.add_argument("--setup", default="")
        parser.add_argument("--max-seconds", type=float, default=600, help="the pilot's lifetime")
        parser.add_argument("--max-jobs", type=int, default=100)
        parser.add_argument(
            "--cpu-scale",
            type=float,
            default=0.001,
            help="payload sleep = job CPUTime x this (bounded by the time left)",
        )
        parser.add_argument("--command", default="", help="run this payload instead of sleeping")
        parser.add_argument("--heartbeat", type=float, default=10.0, help="seconds")
        parser.add_argument(
            "--workdir",
            default="",
            help="payloads' working directories are made under this (default: the temp dir)",
        )
        parser.add_argument(
            "--keep-workdir",
            action="store_true",
            help="leave each payload's working directory behind (for debugging)",
        )

    def handle(self, **o):
        client = Client(o["url"], o["token"])
        reference = o["reference"] or f"pilot://{o['ce'] or o['site']}/{uuid.uuid4().hex[:12]}"
        deadline = time.monotonic() + o["max_seconds"]
        hostname, node = logbook.node()
        status, body = client.post(
            "/api/v1/pilots/",
            {
                "reference": reference,
                "site": o["site"],
                "ce": o["ce"],
                "hostname": hostname,
                "node": node,
            },
        )
        if status not in (200, 201):
            raise CommandError(f"could not register pilot {reference}: {status} {body}")
        pilot_path = f"/api/v1/pilots/{body['id']}/status/"
        self.log = logbook.Logbook(
            client, f"/api/v1/pilots/{body['id']}/log/", lambda t: self.stderr.write(t)
        )
        self.log.add(f"pilot {reference} started on {hostname} ({node['cores']} cores)")
        client.post(pilot_path, {"status": "Running"})
        resource = {"site": o["site"], "pilot_reference": reference}
        if o["ce"]:
            resource["grid_ce"] = o["ce"]
        if o["platform"]:
            resource["platform"] = o["platform"]
        if o["tag"]:
            resource["tag"] = o["tag"]
        if o["setup"]:
            resource["setup"] = o["setup"]
        done = failed = 0
        lost: list[int] = []  # jobs stopped because this pilot's lifetime ended
        while done + failed + len(lost) < o["max_jobs"]:
            left = int(deadline - time.monotonic())
            if left < 1:
                break
            resource["cpu_time"] = min(o["cpu_time"], left)
            status, job = client.post("/api/v1/match/", resource)
            if status == 204:
                self.log.add(f"no job fits {o['site']} with {resource['cpu_time']} s left")
                break
            if status != 200:
                self.log.add(f"match answered {status}: {job}", "ERROR")
                self.log.flush()
                raise CommandError(f"match answered {status}: {job}")
            self.log.add(
                f"matched job {job['id']} (CPU time {job['cpu_time']} s)", job_id=job["id"]
            )
            outcome = self._run(client, job, reference, deadline, o)
            self.log.add(
                f"job {job['id']}: {outcome}", "INFO" if outcome == DONE else "ERROR", job["id"]
            )
            self.log.flush()
            if outcome == LOST:
                lost.append(job["id"])
            done += outcome == DONE
            failed += outcome == FAILED
        ran = f"ran {done} jobs, {failed} failed"
        if lost:
            jobs = ", ".join(str(j) for j in lost)
            final, reason = "Failed", f"{LIFETIME_ENDED} during job {jobs} (given back); {ran}"
        else:
            final, reason = "Done", ran
        self.log.add(f"ending {final}: {reason}", "INFO" if final == "Done" else "ERROR")
        self.log.flush()
        client.post(pilot_path, {"status": final, "reason": reason})
        self.stdout.write(
            f"pilot {reference}: {done} jobs done, {failed} failed"
            + (f", {len(lost)} lost at the end of its lifetime" if lost else "")
        )

    def _run(self, client: Client, job: dict, reference: str, deadline: float, o) -> str:
        """Run one job: DONE, FAILED, or LOST (stopped because the pilot's lifetime ended)."""
        if job.get("payload"):
            options = payloads.Options(
                workdir_root=o["workdir"] or None,
                heartbeat=o["heartbeat"],
                deadline=deadline,
                keep_workdir=o["keep_workdir"],
                log=lambda message: self.log.add(message, job_id=job["id"]),
            )
            outcome = payloads.run_job(client, job, reference, options)
            return LOST if outcome.pilot_failure else DONE if outcome.ok else FAILED
        path = f"/api/v1/jobs/{job['id']}"
        report = {"pilot_reference": reference}
        client.post(f"{path}/status/", {**report, "status": "starting"})
        client.post(f"{path}/status/", {**report, "status": "running"})
        ok, ended, rc = True, False, 0
        if o["command"]:
            try:
                rc = subprocess.run(
                    shlex.split(o["command"]),
                    timeout=max(1.0, deadline - time.monotonic()),
                    check=False,
                ).returncode
                rc = 128 - rc if rc < 0 else rc  # a signal: the shell's way
                ok = rc == 0
            except subprocess.TimeoutExpired:
                ok, ended = False, True
        else:
            wanted = job["cpu_time"] * o["cpu_scale"]
            seconds = min(wanted, max(0.0, deadline - time.monotonic()))
            ended = seconds < wanted
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                time.sleep(min(o["heartbeat"], max(0.0, end - time.monotonic())))
                client.post(f"{path}/heartbeat/", report)
        if ended:
            client.post(
                f"{path}/status/",
                {**report, "status": "failed", "reason": LIFETIME_ENDED, "pilot_failure": True},
            )
            return LOST
        end = {**report, "status": "finished" if ok else "failed", "reason": "payload done"}
        if o["command"]:  # its exit code fails the job with an error code (matcher.errors)
            end["exit_code"] = rc
            self.log.add(f"payload exit code {rc}", "INFO" if ok else "ERROR", job["id"])
        client.post(f"{path}/status/", end)
        return DONE if ok else FAILED
