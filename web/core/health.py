"""GET /healthz: is this host able to serve, and is the grid's machinery turning?

Everything is read from the database, so any host answers for the whole installation: a web
host without workers still sees whether some worker cluster runs the cycles.
  database    reachable (SELECT 1)
  migrations  none left to apply (once true, remembered by the process)
  cluster     the django-q2 scheduler keeps the schedules' next runs current: it advances a due
              schedule within ~30 s, so a schedule overdue by more than CLUSTER_GRACE means no
              cluster is running against this database
  cycles      for every scheduled cycle, the age of its last success against its interval
              (stale past 2 intervals + CYCLE_GRACE); one that has not run yet is "pending" and
              healthy while the cluster is alive and it has not failed. Both are real time:
              the cluster runs the schedules by the wall clock, while a run's timestamps are
              on the grid's clock, which the simulated grid runs faster than real time; the
              age is the real time the clock has certainly let pass since (clock.real_age)
200 when everything is healthy, 503 with `failing` naming what is not. `health()` is the one
verdict: the home page's health panel shows the same, in words (`explain`).
Anyone may ask (load balancers send no credentials): they get `status` and `failing` only. The
checks themselves (the cycle table, ages, intervals, the database's error text: host, address,
port, which is also logged) are shown only to staff (session or token) and to the addresses in
METRICS_ALLOWED_ADDRESSES.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from core import clock
from core.cycle_runs import latest_runs
from core.cycles import CYCLES
from core.models import CycleRun
from core.schedules import SCHEDULES

logger = logging.getLogger(__name__)

CLUSTER_GRACE = timedelta(seconds=120)
CYCLE_GRACE = timedelta(seconds=60)

_migrated = False


def check_database() -> dict:
    started = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute("SELECT 1")
        cur.fetchone()
    return {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 3)}


def check_migrations() -> dict:
    global _migrated
    if not _migrated:
        from django.db.migrations.executor import MigrationExecutor

        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if plan:
            return {"ok": False, "unapplied": [f"{m.app_label}.{m.name}" for m, _ in plan]}
        _migrated = True
    return {"ok": True}


def check_cluster(now) -> dict:
    from django_q.models import Schedule

    oldest = (
        Schedule.objects.exclude(repeats=0)
        .order_by("next_run")
        .values_list("next_run", flat=True)
        .first()
    )
    if oldest is None:
        return {"ok": False, "error": "no schedules: run `manage.py setup_schedules`"}
    overdue = max(0.0, (now - oldest).total_seconds())
    return {"ok": overdue <= CLUSTER_GRACE.total_seconds(), "overdue_s": round(overdue, 1)}


def check_cycles(kinds: dict[str, int], cluster_ok: bool) -> dict[str, dict]:
    """Every scheduled cycle's last run and last success (two queries for them all, an index
    probe per kind), judged in real time against its interval in minutes."""
    last = {run.kind: run.status for run in latest_runs(kinds)}
    succeeded = {run.kind: run.finished for run in latest_runs(kinds, CycleRun.Status.SUCCESS)}
    return {
        kind: judge_cycle(minutes, last.get(kind), succeeded.get(kind), cluster_ok)
        for kind, minutes in kinds.items()
    }


def judge_cycle(minutes: int, last_status: str | None, success, cluster_ok: bool) -> dict:
    interval = timedelta(minutes=minutes)
    out = {"interval_s": interval.total_seconds(), "last_status": last_status}
    if success is None:
        failed = last_status in (CycleRun.Status.FAILED, CycleRun.Status.ABANDONED)
        out.update(
            ok=cluster_ok and not failed, last_success_age_s=None, pending=last_status is None
        )
        return out
    # The cluster runs the schedules by the wall clock; `finished` is on the grid's clock.
    age = clock.real_age(success, at_least=True) or 0.0
    out.update(
        ok=age <= (2 * interval + CYCLE_GRACE).total_seconds(), last_success_age_s=round(age, 1)
    )
    return out


def health() -> tuple[bool, dict]:
    """(healthy, the report): what /healthz answers and the home page's health panel shows."""
    report: dict = {}
    try:
        report["database"] = check_database()
    except DatabaseError as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        logger.warning("healthz: database unreachable: %s", detail)
        report["database"] = {"ok": False, "error": "database unreachable", "detail": detail}
        return False, {**report, "failing": ["database"]}
    report["migrations"] = check_migrations()
    try:
        report["cluster"] = check_cluster(timezone.now())
        scheduled = {kind: minutes for kind, minutes in SCHEDULES.items() if kind in CYCLES}
        report["cycles"] = check_cycles(scheduled, report["cluster"]["ok"])
    except DatabaseError:
        if report["migrations"]["ok"]:
            raise
        # Before `migrate` the tables these read may not exist: the migrations say why.
        report["cluster"] = {"ok": False, "error": "not readable before migrations"}
        report["cycles"] = {}
    failing = [name for name in ("migrations", "cluster") if not report[name]["ok"]]
    failing += [f"cycle:{kind}" for kind, c in report["cycles"].items() if not c["ok"]]
    return not failing, {**report, "failing": failing}


def explain(report: dict) -> list[tuple[str, str | None]]:
    """What fails in a health() report, in words: (text, the page that shows more)."""
    rows: list[tuple[str, str | None]] = []
    for name in report["failing"]:
        check = report.get(name)
        if name == "database":
            rows.append(("The database is unreachable", None))
        elif name == "migrations":
            rows.append((f"Migrations not applied: {', '.join(check['unapplied'])}", None))
        elif name == "cluster":
            if "overdue_s" in check:
                late = clock.ago(check["overdue_s"]).removesuffix(" ago")
                text = f"No django-q2 cluster runs the cycles: their schedules are {late} late"
            else:
                text = f"No django-q2 cluster runs the cycles: {check['error']}"
            rows.append((text, None))
        elif name.startswith("cycle:"):
            kind = name.removeprefix("cycle:")
            rows.append((_cycle_text(kind, report["cycles"][kind]), f"/cycles/?kind={kind}"))
    return rows


def _cycle_text(kind: str, check: dict) -> str:
    every = f"it runs every {clock.ago(check['interval_s']).removesuffix(' ago')}"
    age = check["last_success_age_s"]
    if age is not None:
        last = clock.ago(age)
        return f"Cycle {kind} is overdue: its last success was {last} in real time; {every}"
    if check["last_status"] is None:
        return f"Cycle {kind} has not run yet and no cluster runs it; {every}"
    return f"Cycle {kind} has not succeeded yet: its last run {check['last_status']}; {every}"


@login_not_required
@never_cache
@require_GET
def healthz(request):
    """Load balancers and monitors ask without credentials: they get the status and the names
    of what fails; the checks' figures (cycles, intervals, ages, the database's error) are for
    staff and METRICS_ALLOWED_ADDRESSES."""
    healthy, report = health()
    status = {"status": "ok" if healthy else "unhealthy"}
    if _may_see_details(request):
        body = {**status, **report}
    else:
        body = {**status, "failing": report["failing"]}
    return JsonResponse(body, status=200 if healthy else 503)


def _may_see_details(request) -> bool:
    from web.core.metrics import address_allowed, caller_is_staff

    if address_allowed(request.META.get("REMOTE_ADDR", "")):
        return True
    try:
        return bool(caller_is_staff(request))
    except DatabaseError:  # the user is in the database that just failed: not known to be staff
        return False
