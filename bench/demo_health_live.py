"""The demo grid as a newcomer meets it: against a running `make run`, for a while of real time.

    make run &                                   # in another terminal: the demo on :8000
    .venv/bin/python bench/demo_health_live.py --url http://127.0.0.1:8000 --minutes 24

24 real minutes are a simulated day at the demo's 60×. Every --every seconds it submits, as
alice, a job with an executable (/bin/echo) and follows it to its end; every sample it reads, as
admin, the tasks by state, the jobs per state (the operators' job summary, and `defined` from
the jobs list) and the timeout actions taken, and /healthz. It prints one JSON line a sample and
then the summary figures:
`payload_wait_seconds` (median and max of the probes' real waits, from the job's
`waited_seconds`), `payload_within_a_minute` (the fraction of probes started within 60 s),
`defined_jobs_growth`, `tasks_done`, `timeout_actions_fraction` and `healthz_ok_fraction`.
Standard library only: it talks to the server as any API client does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.error
import urllib.parse
import urllib.request

from _common import emit

TASK_STATES = ("pending", "ready", "assigning", "running", "done", "finished", "failed")


def call(url: str, token: str | None = None, data: dict | None = None, form: bool = False):
    headers = {"Accept": "application/json"}
    body = None
    if token:
        headers["Authorization"] = f"Token {token}"
    if data is not None and form:
        body = urllib.parse.urlencode(data).encode()
    elif data is not None:
        body = json.dumps(data).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None


def token(base: str, username: str, password: str) -> str:
    status, body = call(
        f"{base}/api/v1/auth/token/", data={"username": username, "password": password}, form=True
    )
    if status != 200:
        raise SystemExit(f"cannot log in as {username}: HTTP {status}")
    return body["token"]


def count(base: str, path: str, admin: str, limit: int = 20_000) -> int:
    """Rows of a cursor-paginated list, following `next` (up to `limit`)."""
    url, total = f"{base}{path}", 0
    while url and total < limit:
        status, body = call(url, admin)
        if status != 200:
            return -1
        total += len(body["results"])
        url = body.get("next")
    return total


def job_states(base: str, admin: str) -> dict[str, int]:
    status, body = call(f"{base}/api/v1/monitoring/job-summary/", admin)
    if status != 200:
        return {}
    totals: dict[str, int] = {}
    for site in body["sites"]:
        for state, n in site["counts"].items():
            totals[state] = totals.get(state, 0) + n
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--minutes", type=float, default=24.0, help="real minutes to run")
    parser.add_argument("--every", type=float, default=120.0, help="seconds between probes")
    args = parser.parse_args()
    base = args.url.rstrip("/")
    alice = token(base, "alice", "gridwms")
    admin = token(base, "admin", "admin")

    started = time.monotonic()
    probes: dict[int, float] = {}  # job id -> real time submitted
    waits: list[float] = []
    samples: list[dict] = []
    health_ok = 0
    while time.monotonic() - started < args.minutes * 60:
        status, job = call(
            f"{base}/api/v1/jobs/",
            alice,
            {"executable": "/bin/echo", "arguments": ["probe"], "cpu_time": 60},
        )
        if status == 201:
            probes[job["id"]] = time.monotonic()
        tasks = {
            s: count(base, f"/api/v1/tasks/?status={s}&page_size=500", admin) for s in TASK_STATES
        }
        jobs = job_states(base, admin)
        # PanDA task jobs wait in `defined` before brokerage gives them a site: no site, so not
        # in the per-site summary.
        jobs["defined"] = count(base, "/api/v1/jobs/?status=defined&page_size=500", admin)
        actions = count(base, "/api/v1/timeout-actions/?page_size=500", admin)
        healthz, _ = call(f"{base}/healthz")
        health_ok += healthz == 200
        sample = {
            "minute": round((time.monotonic() - started) / 60, 1),
            "tasks": tasks,
            "jobs": jobs,
            "timeout_actions": actions,
            "healthz": healthz,
        }
        samples.append(sample)
        print(json.dumps(sample), flush=True)
        deadline = time.monotonic() + args.every
        while time.monotonic() < deadline:
            for job_id in list(probes):
                status, body = call(f"{base}/api/v1/jobs/{job_id}/", alice)
                if (
                    status == 200
                    and body.get("waited_seconds") is not None
                    and body["status"] not in ("received", "checking", "waiting", "activated")
                ):
                    waits.append(float(body["waited_seconds"]))
                    del probes[job_id]
            time.sleep(5)

    context = {"minutes": args.minutes, "probes": len(waits) + len(probes), "url": base}
    if waits:
        emit("payload_wait_seconds", statistics.median(waits), "s", max=max(waits), **context)
    emit(
        "payload_within_a_minute",
        sum(w <= 60 for w in waits) / max(1, len(waits) + len(probes)),
        "fraction",
        never_started=len(probes),
        **context,
    )
    first, last = samples[0], samples[-1]
    emit(
        "defined_jobs_growth",
        last["jobs"].get("defined", 0) - first["jobs"].get("defined", 0),
        "jobs",
        first=first["jobs"].get("defined", 0),
        last=last["jobs"].get("defined", 0),
        **context,
    )
    emit("tasks_done", last["tasks"]["done"], "tasks", by_state=last["tasks"], **context)
    all_jobs = sum(last["jobs"].values())
    emit(
        "timeout_actions_fraction",
        last["timeout_actions"] / max(1, all_jobs),
        "fraction",
        actions=last["timeout_actions"],
        jobs=all_jobs,
        **context,
    )
    emit(
        "healthz_ok_fraction", health_ok / len(samples), "fraction", samples=len(samples), **context
    )


if __name__ == "__main__":
    main()
