"""Time the matcher on a million waiting jobs: against the seed's literal algorithm, its latency
in-process and through HTTP, its throughput with four matcher processes.

    .venv/bin/python bench/match.py --scale small        # the embedded server without DATABASE_URL
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/match.py --scale full

The world (full scale): the demo world, 900,000 jobs over 250 distinct requirement templates x 4
CPU segments (1,000 TaskQueues), plus one TaskQueue of 100,000 jobs with mixed UserPriorities
owned by a dedicated user, so that a private pilot of that user matches it alone.

Prints one JSON object per line (bench/RESULTS.md, How the benchmarks report):
  match_speedup_vs_literal  on the big TaskQueue, the median time of the seed's literal match
                            (ORDER BY random()/UserPriority over every member, then a claim of
                            one of the ten lowest JobIDs at the winning priority) over the
                            median of our match_job; both claim a job each time
  match_p50_ms, match_p99_ms  match_job in-process, a resource matching everything
  http_match_p50_ms         POST /api/v1/match/ (a generic pilot at a named site and CE) to
                            `manage.py runserver` with TCP_NODELAY, one keep-alive connection
  matches_per_s_4proc       four spawned matcher processes for a fixed time
  duplicates                jobs claimed twice by those processes (cross-checked in the database)
Everything happens in a throw-away database that is dropped at the end.

The grid's own shapes (bench/match_grid.py): `--shape many-small` (10,000 jobs in ~3,660
TaskQueues), `--shape wide` (1,000,000 jobs in 5,000 TaskQueues), `--shape tq100|tq1000|tq4000`
(100,000 jobs in 100, 1,000 or 4,000 TaskQueues), 1,000 serial matches over twenty resource
descriptions; `--dump-world FILE` writes such a world for bench/dirac_tqdb.py. `--churn` (with
--shape many-small) four matcher processes for 60 s at full scale (--seconds to change) while
TaskQueues are created at 20/s and the priorities cycle runs every 10 s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import match_grid
from _common import ROOT, emit, throwaway_database


@dataclass(frozen=True)
class Scale:
    jobs: int  # spread over the templates' TaskQueues
    big: int  # in the one big TaskQueue
    literal: int  # timed literal and timed match_job calls on the big TaskQueue, each
    matches: int  # timed in-process matches
    requests: int  # timed HTTP matches
    seconds: float  # how long the four matcher processes run


SCALES = {
    "small": Scale(jobs=18_000, big=2_000, literal=15, matches=500, requests=200, seconds=3.0),
    "full": Scale(jobs=900_000, big=100_000, literal=51, matches=3000, requests=1000, seconds=10.0),
}
PHASES = ("literal", "inprocess", "http", "procs")
TEMPLATES = 250
PROCESSES = 4
WARMUP = 20
BIG_USER = "bench_big"
# A pilot that takes everything: every rule's wildcard, more CPU time than any segment.
EVERYTHING = {
    "site": "any",
    "grid_ce": "any",
    "setup": "any",
    "cpu_time": 10**7,
    "platforms": frozenset({"any"}),
    "tags": frozenset({"any"}),
    "pilot_type": "any",
}
# A generic pilot at a real site and CE (a pilot that claims a job must name where it runs),
# otherwise taking anything: the demo's first site and CE (simulation.demo.SITES).
HTTP_BODY = {
    "site": "LCG.CERN.ch",
    "grid_ce": "ce503.cern.ch",
    "setup": "any",
    "cpu_time": 10**7,
    "platform": "any",
    "tag": ["any"],
    "pilot_type": "any",
    "pilot_reference": "bench-http",
}
# The seed's step 3, literally: every member of the TaskQueue races with key random()/priority
# (UserPriority 0 weighs like matching.ZERO_PRIORITY_WEIGHT); the winner's priority is kept.
LITERAL_SQL = (
    "SELECT job_id, user_priority FROM matcher_taskqueuejob WHERE task_queue_id = %s "
    "ORDER BY random() / GREATEST(user_priority, %s) LIMIT 1"
)


def log(message: str) -> None:
    print(f"[bench/match] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


def summary(times: list[float]) -> dict:
    return {
        "n": len(times),
        "p50_ms": round(statistics.median(times), 3),
        "p99_ms": round(percentile(times, 99), 3),
        "max_ms": round(max(times), 3),
    }


def _proc_stat() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine; None without /proc (not Linux)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)  # idle and iowait are not busy


class MachineCpu:
    """How many cores the whole machine kept busy while timing: this bench's processes and
    PostgreSQL, and anything else running (on a shared machine, the noise to read along)."""

    def __enter__(self) -> MachineCpu:
        self.start, self.end = _proc_stat(), None
        return self

    def __exit__(self, *exc) -> None:
        self.end = _proc_stat()

    def context(self) -> dict:
        if not self.start or not self.end or self.end[1] == self.start[1]:
            return {}
        share = (self.end[0] - self.start[0]) / (self.end[1] - self.start[1])
        return {"machine_busy_cores": round(share * (os.cpu_count() or 1), 2)}


def backend_cpu_seconds(pid: int | None) -> float | None:
    """CPU seconds of a local PostgreSQL backend process; None when it cannot be read."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- the world ---------------------------------------------------------------------------------


@dataclass
class World:
    taskqueues: int
    jobs: int
    big_tq: int
    big_jobs: int
    big_priorities: dict[int, int]
    big_resource: object  # a matching.Resource that matches the big TaskQueue alone


def distinct_templates(rng: random.Random, count: int) -> list:
    """`count` templates with distinct requirements, so that each makes its own 4 TaskQueues."""
    from matcher import bulk

    seen, picked = set(), []
    for t in bulk.make_templates(rng, count * 3):
        key = (t.owner_id, t.owner_group_id, t.setup, json.dumps(t.requirements, sort_keys=True))
        if key not in seen:
            seen.add(key)
            t.top_segment = None  # jobs in every CPU segment, runnable or not
            picked.append(t)
            if len(picked) == count:
                return picked
    raise SystemExit(f"only {len(picked)} distinct templates out of {count * 3}")


def build_world(scale: Scale, seed: int, batch_size: int) -> World:
    from core import gdpconfig
    from matcher import bulk
    from matcher.dispatcher import matching_taskqueues
    from matcher.matching import Resource
    from matcher.models import MULTI_VALUED_FIELDS, Job, TaskQueue, TaskQueuePriorityCount
    from shares.models import GridGroup, User
    from simulation import demo

    demo.create_world()
    templates = distinct_templates(random.Random(seed), TEMPLATES)
    bulk.load_jobs(scale.jobs, seed=seed, batch_size=batch_size, templates=templates)

    # The big TaskQueue: a user of its own (created after the templates drew their owners) in
    # a group without JobSharing, every job in the top CPU segment, UserPriorities as bulk's.
    group = GridGroup.objects.get(name="lhcb_user")
    if group.job_sharing:
        raise SystemExit("lhcb_user has JobSharing: a private pilot would match more")
    user = User.objects.create(username=BIG_USER, dn=demo.DN_PREFIX + BIG_USER)
    user.grid_groups.add(group)
    big_template = bulk.Template(
        user.pk,
        group.pk,
        gdpconfig.get("DefaultSetup"),
        {f: [] for f in MULTI_VALUED_FIELDS},
        "big",
    )
    top = gdpconfig.get("CPUSegments")[-1]
    bulk.load_jobs(
        scale.big, seed=seed + 1, batch_size=batch_size, templates=[big_template], segment=top
    )

    [big] = TaskQueue.objects.filter(owner=user)
    prios = dict(
        TaskQueuePriorityCount.objects.filter(task_queue=big, jobs__gt=0).values_list(
            "user_priority", "jobs"
        )
    )
    members = big.members.count()
    if members != scale.big or sum(prios.values()) != members or len(prios) < 3:
        raise SystemExit(f"big TaskQueue {big.pk}: {members} members, counts {prios}")
    total = Job.objects.count()
    if total != scale.jobs + scale.big:
        raise SystemExit(f"{total} jobs loaded, expected {scale.jobs + scale.big}")
    resource = Resource(**EVERYTHING, owner_id=user.pk, owner_group_id=group.pk, private=True)
    if [tq.id for tq in matching_taskqueues(resource)] != [big.pk]:
        raise SystemExit("the private pilot of the big TaskQueue's owner matches more than it")
    return World(TaskQueue.objects.count(), total, big.pk, members, prios, resource)


# --- (a) the literal algorithm against ours ------------------------------------------------------


def literal_match(tq_id: int, resource, pilot_reference: str, rng: random.Random):
    """The seed's match inside one TaskQueue: the race over every member for the winning
    UserPriority, then the same claim as ours of one of the ten lowest free JobIDs there."""
    from django.db import connection

    from matcher import matching

    try:
        from matcher import claims
    except ImportError:  # the matcher before the TaskQueue view, timed side by side
        from matcher import match as claims

    with connection.cursor() as cur:
        cur.execute(LITERAL_SQL, [tq_id, matching.ZERO_PRIORITY_WEIGHT])
        row = cur.fetchone()
    if row is None:
        return None
    return claims._claim(tq_id, row[1], resource, pilot_reference, rng)


def bench_literal(world: World, scale: Scale, context: dict) -> None:
    from matcher.dispatcher import match_job

    rng = random.Random(11)
    ref = "bench-literal"

    def ours():
        m = match_job(world.big_resource, ref, rng)
        if m is None or m.task_queue_id != world.big_tq:
            raise SystemExit(f"match_job on the big TaskQueue gave {m}")

    def literal():
        if literal_match(world.big_tq, world.big_resource, ref, rng) is None:
            raise SystemExit("the literal match on the big TaskQueue found no job")

    for _ in range(3):
        literal()
        ours()
    times: dict = {literal: [], ours: []}
    with MachineCpu() as cpu:
        for i in range(scale.literal):  # side by side, alternating which goes first
            for fn in (literal, ours) if i % 2 == 0 else (ours, literal):
                t0 = time.perf_counter()
                fn()
                times[fn].append((time.perf_counter() - t0) * 1000)
    lit, our = statistics.median(times[literal]), statistics.median(times[ours])
    emit(
        "match_speedup_vs_literal",
        lit / our,
        "x",
        literal_median_ms=round(lit, 3),
        match_median_ms=round(our, 3),
        literal_p99_ms=round(percentile(times[literal], 99), 3),
        match_p99_ms=round(percentile(times[ours], 99), 3),
        repeats=scale.literal,
        big_tq_jobs=world.big_jobs,
        big_tq_priorities={str(p): n for p, n in sorted(world.big_priorities.items())},
        **cpu.context(),
        **context,
    )


# --- (b) latency in-process and through HTTP ------------------------------------------------------


def bench_inprocess(scale: Scale, context: dict) -> None:
    from matcher.dispatcher import match_job
    from matcher.matching import Resource

    resource, rng = Resource(**EVERYTHING), random.Random(12)
    times = []

    def one() -> None:
        t0 = time.perf_counter()
        if match_job(resource, "bench-inprocess", rng) is None:
            raise SystemExit("no job for the in-process matches")
        times.append((time.perf_counter() - t0) * 1000)

    for _ in range(WARMUP):
        one()
    del times[:]
    with MachineCpu() as cpu:
        for _ in range(scale.matches):
            one()
    s = summary(times)
    extra = {"matches": s["n"], "max_ms": s["max_ms"], **cpu.context(), **context}
    emit("match_p50_ms", s["p50_ms"], "ms", p99_ms=s["p99_ms"], **extra)
    emit("match_p99_ms", s["p99_ms"], "ms", p50_ms=s["p50_ms"], **extra)


def database_env() -> dict[str, str | None]:
    """Environment variables pointing another process's settings at the bench database
    (None: remove the variable)."""
    from django.db import connection

    name = connection.settings_dict["NAME"]
    url = urlsplit(os.environ["DATABASE_URL"])
    return {"DATABASE_URL": url._replace(path=f"/{name}").geturl()}


def with_env(changes: dict[str, str | None]) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The servers timed: `manage.py runserver` as `make run` starts it, and the same server with
# TCP_NODELAY on its sockets. runserver writes a response's headers and its body in two send()s;
# with Nagle's algorithm on, the body waits for the client's delayed ACK of the headers (~40 ms
# on Linux), whatever the view costs. The headline is the server without that stall, with the
# project's settings (a new database connection per request unless DB_POOL is set); the context
# gives the stock runserver and the same server with DB_POOL=1.
RUNSERVER = ["manage.py", "runserver", "--noreload", "--skip-checks"]
NODELAY = [__file__, "--serve"]


def serve(addr: str) -> None:
    """`manage.py runserver --noreload ADDR` with TCP_NODELAY on the accepted sockets."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.core.servers import basehttp

    basehttp.WSGIRequestHandler.disable_nagle_algorithm = True
    call_command("runserver", addr, use_reloader=False, skip_checks=True)


def start_server(argv: list[str], env: dict, port: int, logfile) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, *argv, f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=with_env({**database_env(), **env}),
        stdout=logfile,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.1)
    stop_server(server)
    raise SystemExit("the server did not start listening within 60 s")


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def time_server(argv: list[str], env: dict, token: str, requests: int) -> list[float]:
    """Start a server on the bench database, POST match requests to it over one keep-alive
    connection, stop it; the times of the requests after the warm-up, in ms."""
    body = json.dumps(HTTP_BODY)
    headers = {
        "Authorization": f"Token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    port = free_port()
    with tempfile.TemporaryFile() as logfile:
        server = start_server(argv, env, port, logfile)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.connect()
            # http.client, too, writes the headers and the body apart: the client's own Nagle
            # would wait for the server's delayed ACK. HTTP clients such as urllib3 set this.
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            times = []
            for i in range(WARMUP + requests):
                t0 = time.perf_counter()
                conn.request("POST", "/api/v1/match/", body=body, headers=headers)
                response = conn.getresponse()
                payload = response.read()
                elapsed = (time.perf_counter() - t0) * 1000
                if response.status != 200:
                    raise SystemExit(f"POST /api/v1/match/ answered {response.status}: {payload}")
                if i >= WARMUP:
                    times.append(elapsed)
            conn.close()
        except BaseException:
            logfile.seek(0)
            sys.stderr.write(logfile.read().decode(errors="replace")[-4000:])
            raise
        finally:
            stop_server(server)
    return times


def bench_http(scale: Scale, context: dict) -> None:
    from django.db import connection
    from rest_framework.authtoken.models import Token

    token = Token.objects.get(user__username="pilot").key
    connection.close()  # the servers get their own connections
    with MachineCpu() as cpu:
        s = summary(time_server(NODELAY, {}, token, scale.requests))
    pooled = summary(time_server(NODELAY, {"DB_POOL": "1"}, token, scale.requests))
    extra = {"db_pool_p50_ms": pooled["p50_ms"], "db_pool_p99_ms": pooled["p99_ms"]}
    stock = summary(time_server(RUNSERVER, {}, token, max(50, scale.requests // 10)))
    emit(
        "http_match_p50_ms",
        s["p50_ms"],
        "ms",
        p99_ms=s["p99_ms"],
        max_ms=s["max_ms"],
        requests=s["n"],
        server="runserver+TCP_NODELAY",
        db_pool=os.environ.get("DB_POOL", ""),
        **extra,
        stock_runserver_p50_ms=stock["p50_ms"],
        **cpu.context(),
        **context,
    )


# --- (c) four matcher processes ---------------------------------------------------------------


def matcher_process(env, worker, duration, start_at, go, out) -> None:
    """A spawned matcher: Django on the bench database, one untimed warm-up match, then
    match_job in a loop from the common start time for `duration` seconds."""
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    import django

    django.setup()
    from django.db import connection, connections

    from matcher.dispatcher import match_job
    from matcher.matching import Resource

    resource, rng, ref = Resource(**EVERYTHING), random.Random(100 + worker), f"bench-proc-{worker}"
    claimed, times, ran_dry = [], [], False
    try:
        m = match_job(resource, ref, rng)
        if m is not None:
            claimed.append(m.job.id)
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            backend = cur.fetchone()[0]
        out.put(("ready", worker))
        go.wait()
        start = start_at.value
        while time.monotonic() < start:
            time.sleep(0.001)
        end = start + duration
        cpu0, db_cpu0 = time.process_time(), backend_cpu_seconds(backend)
        while time.monotonic() < end:
            t0 = time.perf_counter()
            m = match_job(resource, ref, rng)
            times.append((time.perf_counter() - t0) * 1000)
            if m is None:
                ran_dry = True
                break
            claimed.append(m.job.id)
        finished = time.monotonic()
        cpu = time.process_time() - cpu0
        db_cpu1 = backend_cpu_seconds(backend)
        db_cpu = None if db_cpu0 is None or db_cpu1 is None else db_cpu1 - db_cpu0
    finally:
        connections.close_all()
    out.put(("done", worker, claimed, times, finished, ran_dry, cpu, db_cpu))


def run_processes(duration: float) -> dict:
    ctx = multiprocessing.get_context("spawn")
    out, go, start_at = ctx.Queue(), ctx.Event(), ctx.Value("d", 0.0)
    env = database_env()
    procs = [
        ctx.Process(target=matcher_process, args=(env, w, duration, start_at, go, out))
        for w in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            out.get(timeout=120)
        start_at.value = time.monotonic() + 0.2
        go.set()
        with MachineCpu() as machine:
            results = [out.get(timeout=duration + 120) for _ in procs]
    finally:
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
    if [p.exitcode for p in procs] != [0] * PROCESSES:
        raise SystemExit(f"matcher processes exited with {[p.exitcode for p in procs]}")
    claimed = [job for r in results for job in r[2]]
    times = [t for r in results for t in r[3]]
    timed = sum(len(r[3]) - r[5] for r in results)
    elapsed = max(r[4] for r in results) - start_at.value
    cpu = {**machine.context()}
    if timed:
        # CPU per match of the matcher processes and of their PostgreSQL backends; with the
        # machine's busy cores, what else took the CPU meanwhile (others_cores).
        ours = sum(r[6] for r in results)
        cpu["cpu_ms_per_match_python"] = round(ours * 1000 / timed, 3)
        if all(r[7] is not None for r in results):
            backends = sum(r[7] for r in results)
            cpu["cpu_ms_per_match_postgres"] = round(backends * 1000 / timed, 3)
            ours += backends
        if "machine_busy_cores" in cpu:
            cpu["others_cores"] = round(max(0.0, cpu["machine_busy_cores"] - ours / elapsed), 2)
    return {
        "claimed": claimed,
        "times": times,
        "timed": timed,
        "elapsed": elapsed,
        "per_process": [len(r[3]) for r in sorted(results, key=lambda r: r[1])],
        "ran_dry": any(r[5] for r in results),
        "cpu": cpu,
    }


def database_check(claimed: list[int]) -> dict:
    """What the database says about the processes' claims: jobs sent to them, and history rows
    of moves to sent (a job given twice would have two)."""
    from matcher.models import Job, JobStatus, JobStatusHistory

    prefix = "bench-proc-"
    sent = Job.objects.filter(status=JobStatus.SENT, pilot_reference__startswith=prefix)
    history = JobStatusHistory.objects.filter(
        to_status=JobStatus.SENT, job__pilot_reference__startswith=prefix
    )
    db_sent, db_history = sent.count(), history.count()
    distinct = len(set(claimed))
    return {
        "claimed": len(claimed),
        "distinct": distinct,
        "db_sent": db_sent,
        "db_sent_history": db_history,
        "consistent": db_sent == distinct and db_history == len(claimed),
    }


def bench_processes(scale: Scale, context: dict) -> None:
    from django.db import connection

    connection.close()
    r = run_processes(scale.seconds)
    check = database_check(r["claimed"])
    s = summary(r["times"])
    rate = r["timed"] / r["elapsed"]
    common = {"processes": PROCESSES, "seconds": round(r["elapsed"], 2), **context}
    if r["ran_dry"]:
        common["ran_dry"] = True
    emit(
        "matches_per_s_4proc",
        rate,
        "matches/s",
        matches=r["timed"],
        per_process=r["per_process"],
        p50_ms=s["p50_ms"],
        p99_ms=s["p99_ms"],
        max_ms=s["max_ms"],
        **r["cpu"],
        **common,
    )
    emit("duplicates", check["claimed"] - check["distinct"], "jobs", **check, **common)


# --- main -------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--batch-size", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--phases",
        default=",".join(PHASES),
        help=f"comma-separated subset of {','.join(PHASES)} (default: all)",
    )
    parser.add_argument("--seconds", type=float, help="override how long the processes run")
    parser.add_argument(
        "--shape",
        choices=["few-large", *match_grid.SHAPE_NAMES],
        default="few-large",
        help="few-large: the world above; the others: see bench/match_grid.py",
    )
    parser.add_argument(
        "--churn", action="store_true", help="four matchers while TaskQueues come and go"
    )
    parser.add_argument(
        "--dump-world", metavar="FILE", help="write the --shape world as JSON (bench/dirac_tqdb.py)"
    )
    parser.add_argument("--serve", metavar="ADDR:PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)  # a server for the HTTP part, on the database its environment names
        return
    phases = [p for p in args.phases.split(",") if p]
    if unknown := set(phases) - set(PHASES):
        parser.error(f"unknown phases {sorted(unknown)}")
    if args.dump_world and (args.churn or args.shape == "few-large"):
        parser.error("--dump-world writes the world of a --shape other than few-large, no --churn")
    if args.shape != "few-large" or args.churn:
        shape = "many-small" if args.shape == "few-large" else args.shape
        seconds = (args.seconds or match_grid.CHURN_SECONDS[args.scale]) if args.churn else None
        match_grid.run(shape, args.scale, args.seed, seconds, database_env, args.dump_world)
        return
    scale = SCALES[args.scale]
    if args.seconds is not None:
        scale = Scale(**{**scale.__dict__, "seconds": args.seconds})

    with throwaway_database("match"):
        log(f"loading {scale.jobs + scale.big} jobs")
        started = time.perf_counter()
        world = build_world(scale, args.seed, args.batch_size)
        log(f"loaded in {time.perf_counter() - started:.1f} s: {world.taskqueues} TaskQueues")
        context = {
            "jobs": world.jobs,
            "taskqueues": world.taskqueues,
            "scale": args.scale,
            "db": "postgresql",
        }
        steps = {
            "literal": lambda: bench_literal(world, scale, context),
            "inprocess": lambda: bench_inprocess(scale, context),
            "http": lambda: bench_http(scale, context),
            "procs": lambda: bench_processes(scale, context),
        }
        try:
            for phase in PHASES:
                if phase in phases:
                    log(phase)
                    steps[phase]()
        finally:
            match_grid.settle(stop=True)  # the housekeeping thread's connection, before the drop


if __name__ == "__main__":
    main()
