"""The real pilot client: talks to gridwms over HTTP with the standard library only.

It registers itself, presents its resource description to /api/v1/match/, reports each job
starting and running, sends heartbeats while the payload runs (a bounded sleep, or a command),
reports the job finished or failed, and asks again until no job fits or its time is up.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
import urllib.error
import urllib.request
import uuid

from django.core.management.base import BaseCommand, CommandError


class Client:
    def __init__(self, url: str, token: str, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def post(self, path: str, body: dict, attempts: int = 4) -> tuple[int, dict]:
        """POST, retried with a growing pause on a server error or a lost connection."""
        for attempt in range(attempts):
            try:
                status, answer = self._post(path, body)
            except (urllib.error.URLError, TimeoutError, ConnectionError):
                if attempt == attempts - 1:
                    raise
                status, answer = 599, {}
            if status < 500 or attempt == attempts - 1:
                return status, answer
            time.sleep(0.5 * 2**attempt)
        return status, answer

    def _post(self, path: str, body: dict) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Token {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else {}
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                return exc.code, {"detail": raw.decode(errors="replace")[:500]}


class Command(BaseCommand):
    help = "Run a pilot: ask gridwms for jobs over HTTP and run them."

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True, help="e.g. http://127.0.0.1:8000")
        parser.add_argument("--token", required=True, help="the pilot credential's API token")
        parser.add_argument("--site", required=True)
        parser.add_argument("--ce", default="")
        parser.add_argument("--reference", default="", help="default: a new unique one")
        parser.add_argument("--cpu-time", type=int, default=86400)
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

    def handle(self, **o):
        client = Client(o["url"], o["token"])
        reference = o["reference"] or f"pilot://{o['ce'] or o['site']}/{uuid.uuid4().hex[:12]}"
        deadline = time.monotonic() + o["max_seconds"]
        status, body = client.post(
            "/api/v1/pilots/", {"reference": reference, "site": o["site"], "ce": o["ce"]}
        )
        if status not in (200, 201):
            raise CommandError(f"could not register pilot {reference}: {status} {body}")
        pilot_path = f"/api/v1/pilots/{body['id']}/status/"
        client.post(pilot_path, {"status": "Running"})
        resource = {"site": o["site"], "cpu_time": o["cpu_time"], "pilot_reference": reference}
        if o["ce"]:
            resource["grid_ce"] = o["ce"]
        if o["platform"]:
            resource["platform"] = o["platform"]
        if o["tag"]:
            resource["tag"] = o["tag"]
        if o["setup"]:
            resource["setup"] = o["setup"]
        done = failed = 0
        while done + failed < o["max_jobs"] and time.monotonic() < deadline:
            status, job = client.post("/api/v1/match/", resource)
            if status == 204:
                break
            if status != 200:
                raise CommandError(f"match answered {status}: {job}")
            ok = self._run(client, job, reference, deadline, o)
            done += ok
            failed += not ok
        final = "Done"
        client.post(pilot_path, {"status": final, "reason": f"ran {done} jobs, {failed} failed"})
        self.stdout.write(f"pilot {reference}: {done} jobs done, {failed} failed")

    def _run(self, client: Client, job: dict, reference: str, deadline: float, o) -> bool:
        path = f"/api/v1/jobs/{job['id']}"
        report = {"pilot_reference": reference}
        client.post(f"{path}/status/", {**report, "status": "starting"})
        client.post(f"{path}/status/", {**report, "status": "running"})
        ok = True
        if o["command"]:
            try:
                rc = subprocess.run(
                    shlex.split(o["command"]),
                    timeout=max(1.0, deadline - time.monotonic()),
                    check=False,
                ).returncode
                ok = rc == 0
            except subprocess.TimeoutExpired:
                ok = False
        else:
            seconds = min(job["cpu_time"] * o["cpu_scale"], max(0.0, deadline - time.monotonic()))
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                time.sleep(min(o["heartbeat"], max(0.0, end - time.monotonic())))
                client.post(f"{path}/heartbeat/", report)
        client.post(
            f"{path}/status/",
            {**report, "status": "finished" if ok else "failed", "reason": "payload done"},
        )
        return ok
