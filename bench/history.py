"""A year of a large grid: every page, summary and API answer, the match path, retention and an
index migration, with the year's history in the tables.

    .venv/bin/python bench/history.py --scale small     # ~200,000 history jobs, minutes
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/history.py --scale full --database gridwms_hb_full

`full`: 20,000,000 finished and failed jobs with 4 status-history rows each (bench/history_load.py:
COPY text in batches, two writers, the schema's indexes in place), a year of hourly accounting,
notices, beside 1,000,000 waiting jobs in 5,000 TaskQueues loaded by matcher.bulk. The match
path's p50 is taken before the history is loaded (`empty_match_p50_ms`) and after it
(`history_match_p50_ms`). Every GET route of the URLconfs (the admin's aside, measured apart) is
asked for as staff (admin), as a user owning 100,000 of the jobs (alice) and as a JobSharing
member (carol), pages through Django's test Client with a session, the API with a token; each
answer's median of --repeat warm requests is printed (target 300 ms), then the largest
(`history_max_page_ms`). The retention and migration stalls come from bench/retention.py and
bench/migration_stall.py. The database is dropped at the end unless --keep.

The full load takes about an hour: `--phase load --database NAME` loads and keeps it (measuring
only the match before the history), `--phase measure --database NAME` measures it again with
the code as it is (migrated first, its rollups rebuilt; `--empty-match-p50-ms` the load's figure
to compare the match with). Each measure's retention run expires another day of the year.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import random
import re
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from _common import _wait_for_other_sessions, database_url, emit


@dataclass(frozen=True)
class Scale:
    history: int  # finished and failed jobs
    waiting: int
    templates: int  # distinct requirement sets: 4 TaskQueues each (one per CPU segment)
    user_jobs: int  # alice's share of the history
    pairs_per_hour: int  # accounting: (user, group) pairs binned per hour at every CE
    users: int  # owners beside the demo's
    matches: int


SCALES = {
    "small": Scale(200_000, 50_000, 250, 10_000, 4, 30, 200),
    "full": Scale(20_000_000, 1_000_000, 1250, 100_000, 20, 300, 500),
}
PAGE_TARGET_MS = 300.0
USERS = ("admin", "alice", "carol")  # staff; a user with many jobs; a JobSharing member
# A route whose name ends so writes, or streams every row (an export is not a page: bench/
# monitoring.py measures it as a stream): not asked for.
SKIP_NAMES = re.compile(r"(^|-)(export|submit|bulk|kill|reschedule|retry|release|remove|"
                        r"heartbeat|report-status|rollback|reset|revert|clock-action|logout|"
                        r"getjob|updatejob|submit-jdl|status)$")  # fmt: skip


def log(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


@contextmanager
def bench_database(name: str, keep: bool, reuse: bool = False):
    """Django set up on a new database `name` (migrated as the test runner does), dropped at
    the end unless `keep`; with `reuse`, on the database `name` a --phase load left (migrated
    to the code as it is now), never dropped."""
    database_url()
    import django
    from django.conf import settings

    if reuse:
        settings.DATABASES["default"]["NAME"] = name
        django.setup()
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        try:
            yield
        finally:
            from matcher.services.housekeeping import housekeeper

            housekeeper.stop()
            connections.close_all()
        return
    settings.DATABASES["default"]["TEST"] = {"NAME": name}
    django.setup()
    from django.db import connections
    from django.test.utils import setup_databases, setup_test_environment, teardown_databases

    setup_test_environment(debug=False)
    old = setup_databases(verbosity=0, interactive=False, serialized_aliases=set())
    try:
        yield
    finally:
        from matcher.services.housekeeping import housekeeper

        housekeeper.stop()
        connections.close_all()
        if not keep:
            _wait_for_other_sessions(5.0)
            _end_own_sessions(name)
            teardown_databases(old, verbosity=0)


def _end_own_sessions(name: str) -> None:
    """End what is left on this bench's own database (a thread's connection this process
    opened), so that it can be dropped."""
    from django.db import connection

    with connection._nodb_cursor() as cur:
        cur.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )


# --- the world -----------------------------------------------------------------------------------


def make_owners(scale: Scale):
    """The demo's users and `scale.users` more in the three ordinary groups; alice owns every
    (history / user_jobs)-th history job, the rest spread over every (user, group) pair."""
    from history_load import Owners

    from shares.models import GridGroup, User
    from simulation import demo

    groups = {g.name: g for g in GridGroup.objects.filter(name__in=demo.PRODUCTION_GROUPS | {
        "lhcb_user"})}  # fmt: skip
    names = sorted(groups)
    for k in range(scale.users):
        user = User.objects.create(username=f"hb{k:04d}", dn=f"{demo.DN_PREFIX}hb{k:04d}")
        user.grid_groups.add(groups[names[k % len(names)]])
    pairs = list(
        User.grid_groups.through.objects.filter(gridgroup__name__in=names)
        .exclude(user__username="alice")
        .values_list("user_id", "gridgroup_id")
    )
    alice = User.objects.get(username="alice")
    pinned = (alice.pk, groups["lhcb_user"].pk)
    return Owners(pairs, [1.0] * len(pairs), pinned, max(1, scale.history // scale.user_jobs))


def history_templates(rng: random.Random, templates) -> list[tuple]:
    """(setup, CPU time, the eight requirement lists as COPY fields) per template."""
    from core import db
    from matcher.taskqueues import MULTI_VALUED_FIELDS
    from simulation.demo import CPU_TIMES

    out = []
    for t in templates:
        lists = "\t".join(db.copy_escape(json.dumps(t.requirements[f])) for f in
                          MULTI_VALUED_FIELDS)  # fmt: skip
        out.append((db.copy_escape(t.setup), rng.choice(CPU_TIMES), lists))
    return out


def time_matches(n: int, rounds: int = 3) -> float:
    """The in-process match path's p50 (ms) of a pilot taking anything: the lowest of
    `rounds` rounds' medians of n / rounds matches each (the machine is shared: the quietest
    round is the path's own cost)."""
    from match import EVERYTHING

    from matcher.dispatcher import match_job
    from matcher.matching import Resource

    resource, rng, medians = Resource(**EVERYTHING), random.Random(12), []
    for _ in range(rounds):
        times = []
        for k in range(n // rounds + 10):
            t0 = time.perf_counter()
            if match_job(resource, "bench-history", rng) is None:
                raise SystemExit("no job left to match")
            if k >= 10:  # warm-up
                times.append((time.perf_counter() - t0) * 1000)
        medians.append(statistics.median(times))
        time.sleep(1.0)
    return min(medians)


def rebuild_rollups() -> str:
    """The summaries' rollups, rebuilt after the direct COPY of the history (their owner's
    `rebuild()`), when the project has them."""
    for module in ("matcher.rollups", "matcher.services.rollups", "monitoring.rollups"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(mod, "rebuild"):
            mod.rebuild()
            return module
    return ""


# --- the pages -----------------------------------------------------------------------------------


def get_routes() -> list[tuple[str, str, list[str]]]:
    """(route, name, kwargs) of every URL pattern but the format-suffixed copies of the API's."""
    from django.urls import URLPattern, URLResolver, get_resolver

    out = []

    def walk(patterns, prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern) and "format>" not in str(p.pattern):
                kwargs = list(p.pattern.regex.groupindex)
                out.append((prefix + str(p.pattern), p.name or "", kwargs))

    walk(get_resolver().url_patterns, "")
    return out


def samples(username: str) -> dict[str, object]:
    """An object of each kind the user may see, for the routes' arguments."""
    from core.models import CycleRun
    from matcher.models import ComputingElement, Job, Site, TaskQueue
    from shares.models import GridGroup, User

    user = User.objects.get(username=username)
    job = Job.objects.visible_to(user).filter(status="finished").order_by("id").first()
    return {
        "job": job and job.pk,
        "taskqueue": TaskQueue.objects.order_by("id").values_list("id", flat=True).first(),
        "site": Site.objects.order_by("id").values_list("id", flat=True).first(),
        "computingelement": ComputingElement.objects.values_list("id", flat=True).first(),
        "gridgroup": GridGroup.objects.get(name="lhcb_user").pk,
        "group": GridGroup.objects.get(name="lhcb_user").pk,
        "cyclerun": CycleRun.objects.values_list("id", flat=True).first(),
        "username": username,
        # Part of a name a few hundred jobs share (history_load's names: kind-2026wNN-id),
        # and a week of the year's first months (2 % of the jobs, all old).
        "rare": Job.objects.filter(pk=Job.objects.order_by("id").values("id")[:1])
        .values_list("name", flat=True)
        .first()[-11:-2],
        "old": "2026w05",
        "parameter": "CPUSegments",
    }


def build_url(route: str, name: str, kwargs: list[str], sample: dict) -> str | None:
    """The route with its arguments filled from `sample`, or None when nothing fills them."""
    values = {}
    for kw in kwargs:
        if kw == "username":
            values[kw] = sample["username"]
        elif kw == "name" and name.startswith("parameter"):
            values[kw] = sample["parameter"]
        elif kw == "pk":
            value = sample.get(name.split("-")[0])
            if value is None:
                return None
            values[kw] = value
        else:
            return None
    path = route.replace("^", "").replace("$", "").replace("\\.", ".")
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(values[m.group(1)]), path)
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m.group(1)]), path)
    if re.search(r"[()\\*+?\[]", path):
        return None
    return "/" + path


def extra_urls(sample: dict) -> list[tuple[str, str]]:
    """What users ask of the lists beyond their first page: searches (part of a name that
    few jobs have, one that many old jobs have, none has), filters, sorts, 30 days of
    accounting (its longest window)."""
    rare, old = sample["rare"], sample["old"]
    return [
        ("job-list q=rare name part", f"/jobs/?q={rare}"),
        ("job-list q=old name part", f"/jobs/?q={old}"),
        ("job-list q=absent", "/jobs/?q=no-such-name"),
        ("job-list status=failed", "/jobs/?status=failed"),
        ("job-list ordering=-status_changed", "/jobs/?ordering=-status_changed"),
        ("job-list ordering=name", "/jobs/?ordering=name"),
        ("api job-list q=rare name part", f"/api/v1/jobs/?q={rare}"),
        ("api job-list status=finished", "/api/v1/jobs/?status=finished"),
        ("quick-search name part", f"/search/?q={rare}"),
        ("quick-search job id", f"/search/?q={sample['job']}"),
        ("error-summary 24h", "/monitoring/errors/?hours=24"),
        ("error-summary 720h", "/monitoring/errors/?hours=720"),
        ("accounting 30 days by user", "/accounting/?hours=720&group_by=user"),
        ("accounting day by site", "/accounting/?hours=24&group_by=site"),
    ]


def time_url(client, url: str, repeat: int, **headers) -> tuple[int, list[float]]:
    first = client.get(url, **headers)  # warm-up, and the status the others must give
    if first.status_code != 200:
        return first.status_code, []
    if getattr(first, "streaming", False):
        return -1, []
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        client.get(url, **headers)
        times.append((time.perf_counter() - t0) * 1000)
    return 200, times


def time_pages(args, context: dict) -> tuple[float, str, float]:
    """Every route for every user; returns the largest median (web and API), its page, and the
    largest median of the admin's pages."""
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from shares.models import User

    routes = get_routes()
    worst, worst_page, worst_admin = 0.0, "", 0.0
    over: list[str] = []
    for username in USERS:
        user = User.objects.get(username=username)
        web = Client()
        web.force_login(user)
        token = Token.objects.get_or_create(user=user)[0].key
        sample = samples(username)
        cases, untimed = [], []
        for route, name, kwargs in routes:
            if SKIP_NAMES.search(name) or route in ("favicon.ico",):
                continue
            if route.startswith("admin/") and (not user.is_staff or kwargs):
                continue
            url = build_url(route, name, kwargs, sample)
            if url is None:
                untimed.append(f"{name or route}: no argument to fill")
                continue
            cases.append((name or route, url))
        cases += extra_urls(sample)
        for page, url in cases:
            api = url.startswith("/api/") or url.startswith("/server/")
            client = Client() if api else web
            headers = {"HTTP_AUTHORIZATION": f"Token {token}"} if api else {}
            status, times = time_url(client, url, args.repeat, **headers)
            if not times:
                untimed.append(f"{page} {url}: {'streamed' if status == -1 else status}")
                continue
            median = statistics.median(times)
            area = "admin" if url.startswith("/admin/") else "api" if api else "web"
            emit("page_ms", median, "ms", page=page, url=url, user=username, area=area,
                 target_ms=PAGE_TARGET_MS, max_ms=round(max(times), 1), **context)  # fmt: skip
            if area == "admin":
                worst_admin = max(worst_admin, median)
                continue
            if median > PAGE_TARGET_MS:
                over.append(f"{username} {url} {median:.0f}")
            if median > worst:
                worst, worst_page = median, f"{username} {url}"
        emit("history_pages_untimed", len(untimed), "routes", user=username, which=untimed,
             **context)  # fmt: skip
    emit("history_pages_over_target", len(over), "pages", target_ms=PAGE_TARGET_MS, which=over,
         **context)  # fmt: skip
    return worst, worst_page, worst_admin


def search_without_index(args, sample: dict, context: dict) -> None:
    """The name searches as staff with the trigram index and, in a transaction rolled back,
    without it (what a server where pg_trgm may not be created gives): medians side by side,
    and the API's answers compared."""
    from django.db import connection, transaction
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from shares.models import User

    admin = User.objects.get(username="admin")
    web, api = Client(), Client()
    web.force_login(admin)
    auth = {"HTTP_AUTHORIZATION": f"Token {Token.objects.get_or_create(user=admin)[0].key}"}
    terms = {"rare": sample["rare"], "old": sample["old"], "absent": "no-such-name"}

    def run() -> dict:
        out = {}
        for label, term in terms.items():
            _, times = time_url(web, f"/jobs/?q={term}", args.repeat)
            answer = api.get(f"/api/v1/jobs/?q={term}&page_size=500", **auth).json()
            ids = [row["id"] for row in answer["results"]]
            out[label] = (statistics.median(times), ids)
        return out

    with_index = run()
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("DROP INDEX IF EXISTS job_name_trgm")
        without = run()
        transaction.set_rollback(True)
    for label, term in terms.items():
        (a, ids_a), (b, ids_b) = with_index[label], without[label]
        emit("name_search_ms", a, "ms", term=term, kind=label, without_index_ms=round(b, 1),
             speedup=round(b / a, 2), same_answer=ids_a == ids_b, found=len(ids_a),
             target_ms=PAGE_TARGET_MS, **context)  # fmt: skip


def _bench_function(module: str, name: str):
    """`name` of bench/<module>.py, by its path: `import retention` is the project's app."""
    path = Path(__file__).with_name(f"{module}.py")
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"bench_{module}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name, None)


def stalls(context: dict) -> None:
    """The longest write stall while the retention cycle expires a day's worth of jobs (the
    year's oldest: RetentionJobDays 364) and while a migration adds an index to the job table,
    by the functions of bench/retention.py and bench/migration_stall.py when they are there."""
    for metric, module, fn_name, kwargs in (
        ("retention_max_stall_ms", "retention", "retention_stall", {"job_days": 364}),
        ("migration_max_stall_ms", "migration_stall", "migration_stall", {}),
    ):
        fn = _bench_function(module, fn_name)
        if fn is None:
            log(f"bench/{module}.py has no {fn_name}(): {metric} not measured")
            emit(metric, float("nan"), "ms", measured=False, why=f"no {fn_name}()", **context)
            continue
        try:
            result = fn(**kwargs)
        except Exception as exc:  # the figures before it stand; say why this one is missing
            log(f"{fn_name}() failed: {exc!r}")
            emit(metric, float("nan"), "ms", measured=False, why=repr(exc)[:200], **context)
            continue
        value = result if isinstance(result, int | float) else result.get("max_stall_ms")
        extra = {k: v for k, v in result.items() if k != "max_stall_ms"} if isinstance(
            result, dict) else {}  # fmt: skip
        emit(metric, value, "ms", target_ms=1000, **extra, **context)


def database_size() -> int:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_database_size(current_database())")
        return cur.fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--database", help="its name (default test_gridwms_hb_<scale>_<pid>)")
    parser.add_argument("--keep", action="store_true", help="leave the database behind")
    parser.add_argument("--repeat", type=int, default=5, help="timed requests per page")
    parser.add_argument("--batch-size", type=int, default=50_000)
    parser.add_argument("--history", type=int, help="finished and failed jobs (not the scale's)")
    parser.add_argument(
        "--phase",
        choices=("all", "load", "measure"),
        default="all",
        help="load: load the year into --database and keep it, measure nothing; measure: "
        "measure on the database a load left (migrated first; its rollups rebuilt)",
    )
    parser.add_argument(
        "--empty-match-p50-ms",
        type=float,
        help="with --phase measure: the load's empty_match_p50_ms, to compare the match with",
    )
    args = parser.parse_args()
    scale = SCALES[args.scale]
    if args.history:
        scale = replace(scale, history=args.history)

    if args.phase != "all" and not args.database:
        parser.error("--phase load and --phase measure need --database")
    name = args.database or f"test_gridwms_hb_{args.scale}_{os.getpid()}"
    context = {"scale": args.scale, "history_jobs": scale.history, "waiting_jobs": scale.waiting}
    if args.phase == "measure":
        with bench_database(name, keep=True, reuse=True):
            measure(args, scale, context, name, args.empty_match_p50_ms)
        return
    with bench_database(name, args.keep or args.phase == "load"):
        import history_load
        from django.db import connection
        from match import distinct_templates

        from matcher import bulk
        from matcher.models import Job, TaskQueue
        from simulation import demo

        get_routes()  # the URLconf and the views imported now, as the code is at the start
        demo.create_world()
        owners = make_owners(scale)
        with connection.cursor() as cur:  # the history takes ids 1..N, older than the waiting
            cur.execute("SELECT setval(pg_get_serial_sequence('matcher_job', 'id'), %s)",
                        [scale.history])  # fmt: skip
        rng = random.Random(3)
        templates = distinct_templates(rng, scale.templates)
        t0 = time.perf_counter()
        bulk.load_jobs(scale.waiting, seed=3, batch_size=args.batch_size, templates=templates)
        emit("waiting_load_s", time.perf_counter() - t0, "s",
             taskqueues=TaskQueue.objects.count(), **context)  # fmt: skip
        with connection.cursor() as cur:
            cur.execute("VACUUM ANALYZE")
        empty = time_matches(scale.matches)
        emit("empty_match_p50_ms", empty, "ms", matches=scale.matches,
             loadavg=os.getloadavg()[0], **context)  # fmt: skip

        ces = [(s, ce[0]) for s, rows in demo.SITES.items() for ce in rows]
        tpls = history_templates(rng, templates)

        def progress(done: int, total: int, seconds: float) -> None:
            if done % (10 * args.batch_size) < args.batch_size or done == total:
                log(f"history: {done:,} of {total:,} jobs in {seconds:.0f} s")

        seconds = history_load.load_history_jobs(
            scale.history, owners, tpls, ces, batch=args.batch_size, progress=progress
        )
        emit("history_load_s", seconds, "s", rows_per_s=round(5 * scale.history / seconds),
             history_rows=4 * scale.history, **context)  # fmt: skip
        t0 = time.perf_counter()
        bins = history_load.load_accounting(owners, ces, scale.pairs_per_hour)
        notices = history_load.load_notices(scale.history, owners)
        emit("history_extras_load_s", time.perf_counter() - t0, "s", accounting_bins=bins,
             notices=notices, **context)  # fmt: skip
        t0 = time.perf_counter()
        rollups = rebuild_rollups()
        if not rollups:
            log("no rollups module with rebuild(): the summaries read the job table")
        with connection.cursor() as cur:  # what autovacuum does over a year of history
            cur.execute("VACUUM ANALYZE")
        emit("history_rebuild_analyse_s", time.perf_counter() - t0, "s",
             rollups=rollups or None, **context)  # fmt: skip
        if args.phase == "load":
            emit("history_jobs", Job.objects.count() - scale.waiting, "jobs",
                 target=scale.history, database=name, **context)  # fmt: skip
            return
        measure(args, scale, context, name, empty)


def measure(args, scale: Scale, context: dict, name: str, empty: float | None) -> None:
    """Every page, the match path, the database's size and the stalls, on a loaded database
    (`empty`: the match p50 before the history, if known)."""
    from django.db import connection

    from matcher.models import Job

    if args.phase == "measure":
        get_routes()
        t0 = time.perf_counter()
        rollups = rebuild_rollups()  # the rollups of the code as it is now, from the jobs
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
        emit("history_rebuild_analyse_s", time.perf_counter() - t0, "s",
             rollups=rollups or None, **context)  # fmt: skip
    total = Job.objects.count()
    emit("history_jobs", total - scale.waiting, "jobs", target=scale.history,
         all_jobs=total, **context)  # fmt: skip

    worst, worst_page, worst_admin = time_pages(args, context)
    emit("history_max_page_ms", worst, "ms", target_ms=PAGE_TARGET_MS, page=worst_page,
         **context)  # fmt: skip
    emit("history_max_admin_page_ms", worst_admin, "ms", **context)
    search_without_index(args, samples("admin"), context)
    matched = time_matches(scale.matches)
    compared = (
        {"empty_match_p50_ms": round(empty, 3), "ratio": round(matched / empty, 3)} if empty else {}
    )
    emit("history_match_p50_ms", matched, "ms", **compared,
         target="equal to empty_match_p50_ms", matches=scale.matches,
         loadavg=os.getloadavg()[0], **context)  # fmt: skip
    size = database_size()
    emit("database_size_gib", size / 2**30, "GiB", bytes=size, database=name, **context)
    stalls(context)


if __name__ == "__main__":
    main()
