"""The failed jobs' counts (matcher/services/failures.py) and the error summary that reads them
(web/monitoring/error_summary.py), held against the job table counted directly: the summary of
every user for windows from an hour to a month, unfolded and folded, and, folded, every row of
the rollup with its jobs and lowest job id."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Min
from django.db.models.functions import Trunc

from core import clock
from matcher.models import FailedJobCount, FailedJobDelta, Job, JobStatus
from matcher.services import rollups
from shares.models import User
from web.monitoring import error_summary

WINDOWS = (1, 5, 24, 200, error_summary.MAX_HOURS)


def _spans(at):
    hour = at.replace(minute=0, second=0, microsecond=0)
    return ((1, hour), (24, hour.replace(hour=0)))


def table_rows() -> dict[tuple, tuple[int, int]]:
    """The rollup's rows as the job table makes them: {key: (jobs, lowest id)}."""
    out: dict[tuple, tuple[int, int]] = {}
    fields = ("pk", "status_changed", "owner_id", "owner_group_id", "site", "error_code")
    fields += ("error_category", "status_reason", "task_job__task_id")
    for pk, at, owner, group, site, code, category, reason, task in Job.objects.filter(
        status=JobStatus.FAILED
    ).values_list(*fields):
        dims = (site, code, category, reason, task or 0)
        for span, start in _spans(at):
            for kind, who, keys in (
                ("g", 0, dims),
                ("t", 0, ("", None, "", "", 0)),
                ("o", owner, dims),
                ("u", owner, ("", None, "", "", 0)),
            ):
                key = (kind, span, start, who, group, *keys)
                n, first = out.get(key, (0, pk))
                out[key] = (n + 1, min(first, pk))
    return out


def rollup_rows() -> dict[tuple, tuple[int, int]]:
    keys = ("kind", "span", "start", "owner_id", "owner_group_id", "site", "error_code")
    keys += ("error_category", "reason", "task_id", "jobs", "first_job")
    return {tuple(r[:-2]): tuple(r[-2:]) for r in FailedJobCount.objects.values_list(*keys)}


def table_summary(user, hours: int) -> dict:
    """What the summary shows, counted over the job table (as it was before the rollup)."""
    since = clock.now() - timedelta(hours=hours)
    qs = (
        Job.objects.visible_to(user)
        .filter(status=JobStatus.FAILED, status_changed__gte=since)
        .order_by()
    )

    def grouped(*fields) -> dict:
        rows = qs.values_list(*fields).annotate(n=Count("*"), first=Min("id"))
        return {tuple(r[:-2]): (r[-2], r[-1]) for r in rows}

    bucket = error_summary.bucket_for(hours)
    text = {None: ""}
    return {
        "total": qs.count(),
        "histogram": list(
            qs.annotate(at=Trunc("status_changed", bucket))
            .values_list("at")
            .annotate(n=Count("*"))
            .order_by("at")
        ),
        "by_code": {
            (text.get(code, str(code)), error_summary._code_label(code, category)): v
            for (code, category), v in grouped("error_code", "error_category").items()
        },
        "by_category": {k: v for (k,), v in grouped("error_category").items()},
        "by_reason": {k: v for (k,), v in grouped("status_reason").items()},
        "by_site": {k: v for (k,), v in grouped("site").items()},
        "by_task": {text.get(k, str(k)): v for (k,), v in grouped("task_job__task_id").items()},
        "by_user": {k: v for (k,), v in grouped("owner__username").items()},
        "matrix": {k: n for k, (n, _first) in grouped("site", "error_category").items()},
    }


def shown(user, hours: int) -> dict:
    found = error_summary.summary(user, hours)
    matrix = found.matrix
    categories = [c if c != error_summary.NO_CATEGORY else "" for c in matrix.categories]
    out = {
        "total": found.total,
        "histogram": found.histogram,
        "by_code": {(g.key, g.label): (g.count, g.example_job) for g in found.by_code},
        "matrix": {
            (row.site, category): n
            for row in matrix.rows
            for category, n in zip(categories, row.cells, strict=True)
            if n
        },
    }
    for name in ("by_category", "by_reason", "by_site", "by_task", "by_user"):
        out[name] = {g.key: (g.count, g.example_job) for g in getattr(found, name)}
    return out


def _counts_only(summary: dict) -> dict:
    return {
        name: {k: v[0] for k, v in value.items()} if name.startswith("by_") else value
        for name, value in summary.items()
    }


def assert_summaries_agree(when: str, examples: bool) -> None:
    for user in User.objects.order_by("pk"):
        for hours in WINDOWS:
            expected, found = table_summary(user, hours), shown(user, hours)
            if not examples:
                expected, found = _counts_only(expected), _counts_only(found)
            assert found == expected, f"{user.username}, {hours} h, {when}"


def assert_failed_agree(when: str = "") -> None:
    """The summary equals the job table's count before the fold (its lowest ids may wait for
    the fold) and after; the folded rollup is the job table's, row for row."""
    assert_summaries_agree(f"unfolded {when}", examples=False)
    rollups.fold()
    assert not FailedJobDelta.objects.exists()
    assert rollup_rows() == table_rows(), f"folded rows {when}"
    assert_summaries_agree(f"folded {when}", examples=True)
