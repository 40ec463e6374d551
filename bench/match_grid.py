"""The matcher at a real grid's shape (bench/dispatcher.py --shape NAME, --churn).

many-small  10,000 waiting jobs in about 3,660 TaskQueues (1,000 requirement sets x 4 CPU
            segments, Poisson ~2.5 jobs each: at least 3,500 hold jobs), owned by 55 users of
            the three groups, priorities computed.
wide        1,000,000 waiting jobs in 5,000 TaskQueues (200 each).
tq100, tq1000, tq4000
            100,000 waiting jobs in 100, 1,000 and 4,000 TaskQueues: the other rows of issue
            21's table (DIRAC's side: --dump-world FILE, then bench/dirac_tqdb.py FILE).
The world is built, then its TaskQueues counted (each holds jobs: the load drops the empty
ones); fewer than the shape states stops the bench. Every template has jobs in every CPU
segment, whatever CE takes them, so that each makes 4 TaskQueues.
Twenty resource descriptions: five named sites (and a CE of each) x every CPU segment,
platforms and tags a CE's own or ANY, alternately. 1,000 serial matches over them, each
claiming a job, after one untimed match per resource; then 1,000 more alternating the folded
claim (draw and claim in one statement) with the two-statement one, to show what folding pays.

--churn (the many-small shape with three times its TaskQueues and CHURN_JOBS_PER_S jobs per
second of the run, so that nobody runs dry: 240,000 jobs in ~12,000 TaskQueues at 60 s): four
matcher processes match for `seconds` (CHURN_SECONDS: 60 at full scale, so that several priorities
cycles and the view's 60 s audit fall inside the measured window);
meanwhile a submitter creates new TaskQueues at 20 per second (each with 1-5 jobs) and the
priorities cycle runs every 10 s in a process of its own.

Metrics (JSON lines): match_p50_ms, match_p99_ms, matches_per_s, duplicates,
taskqueue_full_reloads (counted by the matchers themselves, after their warm-up), and for the
serial runs claim_fold_speedup (two-statement p50 / folded p50, side by side). Every line
carries the world's `jobs` and `taskqueues`. `duplicates` is the larger of what the clients'
lists and the database say (jobs with more than one move to sent), with `consistent`: the
database's sent jobs and history rows are exactly the clients' claims.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import statistics
import time
from dataclasses import dataclass

from _common import emit

USERS = {"lhcb_user": 40, "lhcb_mc": 10, "lhcb_data": 5}
SERIAL = 1000
WARMUP_PER_RESOURCE = 1
PROCESSES = 4
SUBMIT_RATE = 20.0  # new TaskQueues per second
PRIORITIES_EVERY = 10.0  # seconds
REF = "bench-grid"


@dataclass(frozen=True)
class Shape:
    jobs: int
    templates: int  # x 4 CPU segments = TaskQueues offered to the jobs
    min_taskqueues: int  # the TaskQueues that hold jobs once loaded, at least


SHAPES = {
    ("many-small", "full"): Shape(jobs=10_000, templates=1_000, min_taskqueues=3_500),
    ("many-small", "small"): Shape(jobs=3_000, templates=300, min_taskqueues=1_000),
    ("wide", "full"): Shape(jobs=1_000_000, templates=1_250, min_taskqueues=5_000),
    ("wide", "small"): Shape(jobs=50_000, templates=250, min_taskqueues=1_000),
    ("tq100", "full"): Shape(jobs=100_000, templates=25, min_taskqueues=100),
    ("tq100", "small"): Shape(jobs=25_000, templates=25, min_taskqueues=100),
    ("tq1000", "full"): Shape(jobs=100_000, templates=250, min_taskqueues=1_000),
    ("tq1000", "small"): Shape(jobs=25_000, templates=250, min_taskqueues=1_000),
    ("tq4000", "full"): Shape(jobs=100_000, templates=1_000, min_taskqueues=4_000),
    ("tq4000", "small"): Shape(jobs=25_000, templates=1_000, min_taskqueues=3_950),
}
SHAPE_NAMES = sorted({name for name, _scale in SHAPES})
CHURN_SECONDS = {"small": 12.0, "full": 60.0}  # the run's default length, by scale
CHURN_JOBS_PER_S = 4_000  # jobs loaded per second of churn (more than 4 matchers take)


def log(message: str) -> None:
    import sys

    print(f"[bench/match --shape] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


# --- what differs between matcher versions (this bench also times the one before the view) ------


_RELOADS = {"n": 0}


def matcher_stats() -> dict:
    """The matcher's own counters; for a matcher without them, its reloads counted here."""
    from matcher import dispatcher

    if hasattr(dispatcher, "stats"):
        return dispatcher.stats()
    if not getattr(dispatcher, "_counted", False):
        load = dispatcher._load_taskqueues

        def counted():
            _RELOADS["n"] += 1
            return load()

        dispatcher._load_taskqueues, dispatcher._counted = counted, True
    return {"taskqueue_full_reloads": _RELOADS["n"]}


def settle(stop: bool = False, timeout: float = 30.0) -> None:
    """Let the background housekeeping finish (and end it), where there is one."""
    try:
        from matcher.services import housekeeping
    except ImportError:
        return
    if stop:
        housekeeping.housekeeper.stop(timeout)
    else:
        housekeeping.housekeeper.idle(timeout)


# --- the world ---------------------------------------------------------------------------------


def add_users() -> None:
    """Users with batches of their own: each an entity of the fair share."""
    from shares.models import GridGroup, User
    from simulation import demo

    for group_name, n in USERS.items():
        group = GridGroup.objects.get(name=group_name)
        for i in range(n):
            name = f"{group_name}_u{i:02d}"
            user = User.objects.create(username=name, dn=demo.DN_PREFIX + name)
            user.grid_groups.add(group)


def templates(rng: random.Random, count: int) -> list:
    """`count` distinct requirement sets for generic pilots (no private-only TaskQueue)."""
    import json

    from matcher import bulk

    seen, picked = set(), []
    for t in bulk.make_templates(rng, count * 3):
        t.requirements["pilot_types"] = []
        t.requirements["submit_pools"] = []  # what DIRAC's TaskQueueDB knows of, alone
        key = (t.owner_id, t.owner_group_id, json.dumps(t.requirements, sort_keys=True))
        if key not in seen:
            seen.add(key)
            # Jobs in every CPU segment, whatever CE takes them (as bench/dispatcher.py): a template
            # kept below its top segment would fill fewer than its 4 TaskQueues.
            t.top_segment = None
            picked.append(t)
            if len(picked) == count:
                return picked
    raise SystemExit(f"only {len(picked)} distinct templates out of {count * 3}")


def build(shape: Shape, seed: int) -> dict:
    from matcher import bulk
    from matcher.models import TaskQueue, TaskQueueJob
    from matcher.taskqueue_priorities import recompute_priorities
    from simulation import demo

    demo.create_world()
    add_users()
    rng = random.Random(seed)
    bulk.load_jobs(
        shape.jobs, seed=seed, batch_size=50_000, templates=templates(rng, shape.templates)
    )
    recompute_priorities()
    world = {
        "jobs": TaskQueueJob.objects.count(),
        "taskqueues": TaskQueue.objects.count(),
        "taskqueues_with_jobs": TaskQueueJob.objects.values("task_queue_id").distinct().count(),
    }
    if world["jobs"] != shape.jobs or world["taskqueues_with_jobs"] < shape.min_taskqueues:
        raise SystemExit(
            f"the world has {world}: expected {shape.jobs} jobs in at least "
            f"{shape.min_taskqueues} TaskQueues"
        )
    return world


def dump_world(path: str) -> None:
    """The world as plain JSON, for bench/dirac_tqdb.py to load the very same jobs, TaskQueues
    and priorities into DIRAC's own TaskQueueDB."""
    import json

    from core import gdpconfig
    from matcher.models import TaskQueue, TaskQueueJob

    members: dict[int, list] = {}
    for job, tq, prio in TaskQueueJob.objects.values_list(
        "job_id", "task_queue_id", "user_priority"
    ):
        members.setdefault(tq, []).append([job, prio])
    tqs = [
        {
            "id": tq.pk,
            "owner": tq.owner.username,
            "group": tq.owner_group.name,
            "cpu_time": tq.cpu_time,
            "sites": tq.sites,
            "banned_sites": tq.banned_sites,
            "grid_ces": tq.grid_ces,
            "platforms": tq.platforms,
            "tags": tq.tags,
            "priority": tq.priority,
            "jobs": members.get(tq.pk, []),
        }
        for tq in TaskQueue.objects.select_related("owner", "owner_group")
    ]
    groups = {g.name: {"share": g.job_share, "sharing": g.job_sharing} for g in _groups()}
    pool = [
        {
            "site": r.site,
            "grid_ce": r.grid_ce,
            "cpu_time": r.cpu_time,
            "platforms": sorted(r.platforms),
            "tags": sorted(r.tags),
        }
        for r in resources()
    ]
    world = {
        "taskqueues": tqs,
        "resources": pool,
        "groups": groups,
        "cpu_segments": gdpconfig.get("CPUSegments"),
        "serial": SERIAL,
    }
    with open(path, "w") as f:
        json.dump(world, f)


def _groups():
    from shares.models import GridGroup

    return GridGroup.objects.filter(generic_pilot=False)


def resources() -> list:
    """Five named sites (a CE of each) x every CPU segment; platforms and tags alternately the
    CE's own or ANY."""
    from core import gdpconfig
    from matcher.matching import Resource
    from simulation.demo import SITES

    out = []
    for k, (site, ces) in enumerate(list(SITES.items())[:5]):
        ce, _kind, _cpu, platforms, tags = ces[0]
        for j, segment in enumerate(gdpconfig.get("CPUSegments")):
            out.append(
                Resource(
                    site=site,
                    grid_ce=ce,
                    setup="any",
                    cpu_time=segment,
                    platforms=frozenset(platforms if (k + j) % 2 else ["any"]),
                    tags=frozenset((tags or ["any"]) if (k + j) % 2 == 0 else ["any"]),
                    pilot_type="any",
                )
            )
    return out


# --- serial matches ----------------------------------------------------------------------------


def serial(context: dict) -> None:
    from matcher import dispatcher

    matcher_stats()  # counting from here for a matcher that does not count
    rng = random.Random(21)
    pool = resources()

    def one(i: int, ref: str) -> tuple[float, object]:
        t0 = time.perf_counter()
        m = dispatcher.match_job(pool[i % len(pool)], ref, rng)
        return (time.perf_counter() - t0) * 1000, m

    for i in range(len(pool) * WARMUP_PER_RESOURCE):
        one(i, f"{REF}-warm")
    settle()
    before = matcher_stats()
    backend = backend_pid()
    times, claimed, dry = [], [], 0
    cpu0, db_cpu0 = time.process_time(), backend_cpu_seconds(backend)
    started = time.perf_counter()
    for i in range(SERIAL):
        ms, m = one(i, f"{REF}-serial")
        times.append(ms)
        if m is None:
            dry += 1
        else:
            claimed.append(m.job.id)
    elapsed = time.perf_counter() - started
    cpu, db_cpu1 = time.process_time() - cpu0, backend_cpu_seconds(backend)
    after = matcher_stats()
    reloads = after["taskqueue_full_reloads"] - before["taskqueue_full_reloads"]
    extra = {
        "matches": len(times),
        "no_job": dry,
        "max_ms": round(max(times), 3),
        "changes_applied": after.get("taskqueue_changes_applied", 0)
        - before.get("taskqueue_changes_applied", 0),
        **context,
    }
    p50, p99 = statistics.median(times), percentile(times, 99)
    emit("match_p50_ms", p50, "ms", p99_ms=round(p99, 3), **extra)
    emit("match_p99_ms", p99, "ms", p50_ms=round(p50, 3), **extra)
    cpu_context = {"cpu_ms_per_match_python": round(cpu * 1000 / len(times), 3)}
    if db_cpu0 is not None and db_cpu1 is not None:
        cpu_context["cpu_ms_per_match_postgres"] = round((db_cpu1 - db_cpu0) * 1000 / len(times), 3)
    emit("matches_per_s", len(times) / elapsed, "matches/s", serial=True, **cpu_context, **extra)
    emit("taskqueue_full_reloads", reloads, "reloads", after_warmup=True, **extra)
    settle()
    emit_duplicates(claimed, f"{REF}-serial", extra)  # not the warm-up's claims

    # The folded claim against the two statements, alternating, on the same world.
    try:
        from matcher import claims
    except ImportError:
        return
    folded, two_step = [], []
    for i in range(SERIAL):
        claims.FOLD_DRAW = i % 2 == 0
        ms, _ = one(i, f"{REF}-fold")
        (folded if claims.FOLD_DRAW else two_step).append(ms)
    claims.FOLD_DRAW = True
    emit(
        "claim_fold_speedup",
        statistics.median(two_step) / statistics.median(folded),
        "x",
        folded_p50_ms=round(statistics.median(folded), 3),
        two_statements_p50_ms=round(statistics.median(two_step), 3),
        folded_p99_ms=round(percentile(folded, 99), 3),
        two_statements_p99_ms=round(percentile(two_step, 99), 3),
        **context,
    )


def backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        return cur.fetchone()[0]


def backend_cpu_seconds(pid: int | None) -> float | None:
    """CPU seconds of a local PostgreSQL backend (its matcher's statements), from /proc."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def db_check(claimed: list[int], prefix: str) -> dict:
    """What the database says about the claims of the pilots named `prefix`...: the jobs sent
    to them and the history rows of moves to sent (a job handed out twice has two), next to the
    clients' own lists. `duplicates` is the larger count of jobs handed out twice."""
    from django.db.models import Count

    from matcher.models import Job, JobStatus, JobStatusHistory

    sent = Job.objects.filter(status=JobStatus.SENT, pilot_reference__startswith=prefix).count()
    moves = (
        JobStatusHistory.objects.filter(
            to_status=JobStatus.SENT, job__pilot_reference__startswith=prefix
        )
        .values("job_id")
        .annotate(n=Count("id"))
    )
    history = sum(m["n"] for m in moves)
    db_duplicates = sum(m["n"] - 1 for m in moves)
    distinct = len(set(claimed))
    return {
        "duplicates": max(len(claimed) - distinct, db_duplicates),
        "claimed": len(claimed),
        "distinct": distinct,
        "db_sent": sent,
        "db_sent_history": history,
        "db_duplicates": db_duplicates,
        "consistent": sent == distinct and history == len(claimed) and db_duplicates == 0,
    }


def emit_duplicates(claimed: list[int], prefix: str, extra: dict) -> None:
    check = db_check(claimed, prefix)
    emit("duplicates", check.pop("duplicates"), "jobs", **check, **extra)
    if not check["consistent"]:
        log(f"the database disagrees with the clients' claims: {check}")


# --- churn -------------------------------------------------------------------------------------


def _child(env: dict) -> None:
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    import django

    django.setup()


def matcher_process(env, worker, duration, start_at, go, out) -> None:
    _child(env)
    from django.db import connections

    from matcher import dispatcher

    rng, ref = random.Random(300 + worker), f"{REF}-churn-{worker}"
    pool = resources()
    claimed, times, claim_times, dry = [], [], [], 0
    try:
        for i in range(len(pool)):
            m = dispatcher.match_job(pool[i], ref, rng)
            if m is not None:
                claimed.append(m.job.id)
        out.put(("ready", worker))
        go.wait()
        while time.monotonic() < start_at.value:
            time.sleep(0.001)
        before = matcher_stats()["taskqueue_full_reloads"]
        end, i = start_at.value + duration, 0
        while time.monotonic() < end:
            t0 = time.perf_counter()
            m = dispatcher.match_job(pool[rng.randrange(len(pool))], ref, rng)
            times.append((time.perf_counter() - t0) * 1000)
            i += 1
            if m is None:
                dry += 1
            else:
                claimed.append(m.job.id)
                claim_times.append(times[-1])
        finished = time.monotonic()
        stats = matcher_stats()
        reloads = stats["taskqueue_full_reloads"] - before
    finally:
        settle(stop=True, timeout=10)
        connections.close_all()
    out.put(("done", worker, claimed, times, finished, dry, reloads, stats, claim_times))


def submitter_process(env, seed, duration, start_at, go, out) -> None:
    """New TaskQueues at SUBMIT_RATE a second, each with 1-5 jobs, through the service."""
    _child(env)
    from django.db import connections

    from matcher import services
    from matcher.models import TaskQueue
    from shares.models import GridGroup, User

    rng = random.Random(seed)
    owners = [
        (u, g)
        for g in GridGroup.objects.filter(generic_pilot=False)
        for u in User.objects.filter(grid_groups=g)
    ]
    out.put(("ready", "submitter"))
    go.wait()
    while time.monotonic() < start_at.value:
        time.sleep(0.001)
    top = TaskQueue.objects.order_by("-id").values_list("id", flat=True).first() or 0
    end, n, late = start_at.value + duration, 0, 0
    try:
        while time.monotonic() < end:
            wait = start_at.value + n / SUBMIT_RATE - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            # Every TaskQueue due by now, in one submission when this process fell behind.
            due = max(1, int((time.monotonic() - start_at.value) * SUBMIT_RATE) + 1 - n)
            late += due > 1
            user, group = rng.choice(owners)
            specs = []
            for k in range(due):
                spec = new_spec(rng, group, n + k)
                specs += [dict(spec) for _ in range(rng.randint(1, 5))]
            services.submit_jobs(user, specs)
            n += due
        settle(stop=True, timeout=10)
        created = TaskQueue.objects.filter(id__gt=top).count()
    finally:
        connections.close_all()
    out.put(("done", "submitter", n, created, late))


def new_spec(rng: random.Random, group, n: int) -> dict:
    """A job spec whose requirements make a TaskQueue of its own (a batch with its own tags)."""
    from core import gdpconfig
    from matcher import bulk
    from simulation.demo import SITES

    sites = list(SITES)
    return {
        "owner_group": group,
        "setup": gdpconfig.get("DefaultSetup"),
        "cpu_time": rng.choice([300, 3000, 30000, 200000]),
        "user_priority": rng.choice(bulk.PRIORITIES),
        "sites": rng.sample(sites, k=rng.randint(1, 3)) if rng.random() < 0.55 else [],
        "platforms": [rng.choice(bulk.PLATFORMS)] if rng.random() < 0.6 else [],
        # A batch tag of its own, so that every submission makes a new TaskQueue: pilots that
        # offer ANY tag take it.
        "tags": [f"batch-{os.getpid()}-{n}"],
    }


def cycler_process(env, duration, start_at, go, out) -> None:
    _child(env)
    from django.db import connections

    from core.cycles import run_cycle

    out.put(("ready", "cycler"))
    go.wait()
    while time.monotonic() < start_at.value:
        time.sleep(0.001)
    runs, seconds = 0, []
    try:
        end = start_at.value + duration
        next_run = start_at.value + 1.0
        while next_run < end:
            time.sleep(max(0.0, next_run - time.monotonic()))
            t0 = time.perf_counter()
            run = run_cycle("priorities")
            seconds.append(time.perf_counter() - t0)
            runs += run is not None and run.status == "success"
            next_run += PRIORITIES_EVERY
    finally:
        connections.close_all()
    out.put(("done", "cycler", runs, seconds))


def churn(env: dict, duration: float, context: dict) -> None:
    from django.db import connection

    connection.close()
    ctx = multiprocessing.get_context("spawn")
    out, go, start_at = ctx.Queue(), ctx.Event(), ctx.Value("d", 0.0)
    procs = [
        ctx.Process(target=matcher_process, args=(env, w, duration, start_at, go, out))
        for w in range(PROCESSES)
    ]
    procs.append(ctx.Process(target=submitter_process, args=(env, 7, duration, start_at, go, out)))
    procs.append(ctx.Process(target=cycler_process, args=(env, duration, start_at, go, out)))
    for p in procs:
        p.start()
    try:
        for _ in procs:
            out.get(timeout=300)
        start_at.value = time.monotonic() + 0.5
        go.set()
        results = [out.get(timeout=duration + 300) for _ in procs]
    finally:
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"churn processes exited with {[p.exitcode for p in procs]}")
    matchers = [r for r in results if isinstance(r[1], int)]
    submitter = next(r for r in results if r[1] == "submitter")
    cycler = next(r for r in results if r[1] == "cycler")
    times = [t for r in matchers for t in r[3]]
    claim_times = [t for r in matchers for t in r[8]] or [0.0]
    claimed = [j for r in matchers for j in r[2]]
    elapsed = max(r[4] for r in matchers) - start_at.value
    extra = {
        "processes": PROCESSES,
        "seconds": round(elapsed, 2),
        "matches": len(times),
        "no_job": sum(r[5] for r in matchers),
        "claiming_p50_ms": round(statistics.median(claim_times), 3),  # the matches with a job
        "claiming_p99_ms": round(percentile(claim_times, 99), 3),
        "per_process": [len(r[3]) for r in sorted(matchers, key=lambda r: r[1])],
        "taskqueues_submitted": submitter[2],
        "taskqueues_created": submitter[3],
        "submissions_late": submitter[4],
        "priorities_cycles": cycler[2],
        "priorities_cycle_s": [round(s, 2) for s in cycler[3]],
        "housekeeping": [
            {k: v for k, v in r[7].items() if k.startswith("housekeeping")} for r in matchers
        ],
        "changes_applied": [r[7].get("taskqueue_changes_applied", 0) for r in matchers],
        "audits": [r[7].get("taskqueue_audits", 0) for r in matchers],
        "churn": True,
        **context,
    }
    p50, p99 = statistics.median(times), percentile(times, 99)
    emit("match_p50_ms", p50, "ms", p99_ms=round(p99, 3), **extra)
    emit("match_p99_ms", p99, "ms", p50_ms=round(p50, 3), max_ms=round(max(times), 3), **extra)
    emit("matches_per_s", len(times) / elapsed, "matches/s", **extra)
    emit(
        "taskqueue_full_reloads", sum(r[6] for r in matchers), "reloads", after_warmup=True, **extra
    )
    emit_duplicates(claimed, f"{REF}-churn-", extra)


def run(
    shape_name: str,
    scale: str,
    seed: int,
    churn_seconds: float | None,
    env_of,
    dump: str | None = None,
) -> None:
    """One shape's world in a throw-away database, its serial matches, then (--churn) the
    churn on a world of its own."""
    from _common import throwaway_database

    shape = SHAPES[(shape_name, scale)]
    if churn_seconds is None:
        with throwaway_database(f"grid_{shape_name.replace('-', '_')}"):
            log(f"loading {shape.jobs} jobs in {shape.templates * 4} TaskQueue slots")
            started = time.perf_counter()
            world = build(shape, seed)
            log(f"loaded in {time.perf_counter() - started:.1f} s: {world}")
            if dump:
                dump_world(dump)
            context = {"shape": shape_name, "scale": scale, "db": "postgresql", **world}
            try:
                serial(context)
            finally:
                settle(stop=True)
        return
    # Three times the shape's TaskQueues, and jobs enough for the run (matchers that ran dry
    # would time empty answers): at 60 s, 240,000 jobs in ~12,000 TaskQueues of ~20 each. (With
    # ~6 jobs each, 55,000 TaskQueues, the priorities cycle alone takes 4-8 s of every 10.)
    big = Shape(
        jobs=max(shape.jobs * 3, round(CHURN_JOBS_PER_S * churn_seconds)),
        templates=shape.templates * 3,
        min_taskqueues=shape.min_taskqueues * 3,
    )
    with throwaway_database("grid_churn"):
        log(f"loading {big.jobs} jobs in {big.templates * 4} TaskQueue slots for the churn")
        world = build(big, seed)
        settle(stop=True)  # the load's marks: this process matches no more
        log(f"loaded: {world}")
        context = {"shape": shape_name, "scale": scale, "db": "postgresql", **world}
        churn(env_of(), churn_seconds, context)
