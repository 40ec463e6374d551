"""POST /api/jobs/search and /api/jobs/summary: gridwms's jobs as DiracX's JobDB columns.

Each DIRAC column is an expression over a job row (COLUMNS); the conditions DiracX's clients
send (`eq neq gt lt like "not like" regex in "not in"`) filter on it, sorting and grouping use it.
Status and MinorStatus are gridwms's state in DIRAC's words (matcher/vocabularies.py): a
condition on them is decided for each of the few states here and becomes `status IN (...)`,
which the job table's indexes serve; a Status value DIRAC does not have is refused.

A user searches the jobs it may see (Job.objects.visible_to: its own and its JobSharing
groups'; staff all of them). Read only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC

from django.conf import settings
from django.db import DataError, transaction
from django.db.models import (
    Case,
    CharField,
    Count,
    DateTimeField,
    F,
    OuterRef,
    Q,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast

from api.diracx.errors import DiracxError, moment, text
from matcher import lifecycle, vocabularies
from matcher.models import Job, JobStatusHistory

MAX_PER_PAGE = 10_000  # DiracX's own bound: a larger page is served as this many
MAX_VALUES = 10_000  # values of one "in" condition
MAX_CONDITIONS = 100
BIGINT = 2**63 - 1
SCALAR = ("eq", "neq", "gt", "lt", "like", "not like", "regex")
VECTOR = ("in", "not in")


def _state_case(word: Callable[[str], str]) -> Case:
    return Case(
        *[When(status=s, then=Value(word(s))) for s in lifecycle.STATES],
        default=Value(""),
        output_field=CharField(),
    )


def _first_start():
    started = JobStatusHistory.objects.filter(
        job=OuterRef("pk"), to_status__in=[lifecycle.STARTING, lifecycle.RUNNING]
    )
    return Subquery(started.order_by("at").values("at")[:1], output_field=DateTimeField())


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "int", "text" or "time": how a condition's value is read
    expression: Callable[[], object]
    word: Callable[[str], str] | None = None  # a state's name in this column (Status...)


def _blank_as(field: str, shown: str) -> Callable[[], Case]:
    return lambda: Case(
        When(**{field: ""}, then=Value(shown)), default=F(field), output_field=CharField()
    )


# DiracX's Jobs columns gridwms can answer, in DIRAC's order; JobGroup is not kept (null).
COLUMNS = {
    c.name: c
    for c in (
        Column("JobID", "int", lambda: F("id")),
        Column("JobType", "text", lambda: Value("User", output_field=CharField())),
        Column("JobGroup", "text", lambda: Value(None, output_field=CharField())),
        Column("Site", "text", _blank_as("site", "ANY")),
        Column("JobName", "text", lambda: F("name")),
        Column("Owner", "text", lambda: F("owner__username")),
        Column("OwnerGroup", "text", lambda: F("owner_group__name")),
        Column("VO", "text", lambda: Value(settings.GRID_VO, output_field=CharField())),
        Column("SubmissionTime", "time", lambda: F("created")),
        Column("LastUpdateTime", "time", lambda: F("status_changed")),
        Column("StartExecTime", "time", _first_start),
        Column("HeartBeatTime", "time", lambda: F("heartbeat")),
        Column(
            "EndExecTime",
            "time",
            lambda: Case(
                When(status__in=lifecycle.FINAL_STATES, then=F("status_changed")),
                default=Value(None),
                output_field=DateTimeField(),
            ),
        ),
        Column(
            "Status",
            "text",
            lambda: _state_case(vocabularies.dirac_status),
            vocabularies.dirac_status,
        ),
        Column(
            "MinorStatus",
            "text",
            lambda: _state_case(vocabularies.dirac_minor_status),
            vocabularies.dirac_minor_status,
        ),
        Column("ApplicationStatus", "text", _blank_as("application_status", "Unknown")),
        Column("UserPriority", "int", lambda: F("user_priority")),
        Column("RescheduleCounter", "int", lambda: F("reschedule_count")),
    )
}


def _alias(name: str) -> str:
    return f"dx_{name}"


# --- reading the body --------------------------------------------------------------------------


def _object(body, field: str, allowed: set[str]) -> dict:
    if body is None or body == "":
        return {}
    if not isinstance(body, dict):
        raise DiracxError(field, "must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise DiracxError(f"{field}.{text(unknown[0], field, 100)}", "unknown field")
    return body


def _list(value, field: str, limit: int) -> list:
    if not isinstance(value, list):
        raise DiracxError(field, "must be a list")
    if len(value) > limit:
        raise DiracxError(field, f"{len(value)} items; at most {limit}")
    return value


def column(name, field: str) -> Column:
    text(name, field, 100)
    if name not in COLUMNS:
        raise DiracxError(field, f"unknown job parameter {name!r}; known: {', '.join(COLUMNS)}")
    return COLUMNS[name]


def _value(col: Column, value, field: str):
    """A condition's value as the column holds it (DiracX's clients send numbers as text)."""
    if col.kind == "int":
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,19}\s*", value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) > BIGINT:
            raise DiracxError(field, f"{col.name} takes an integer")
        return value
    if col.kind == "time":
        when = moment(value, field)
        # A time without its zone is UTC, as DiracX's database keeps them.
        return when if when.tzinfo else when.replace(tzinfo=UTC)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    return text(value, field, 1024)


def like_regex(pattern: str) -> str:
    """SQL LIKE's pattern as an anchored regular expression: % any run, _ any one character."""
    out = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return f"^{out}$"


def _pattern(value, field: str, operator: str) -> str:
    pattern = text(value, field, 1024)
    regex = like_regex(pattern) if operator in ("like", "not like") else pattern
    try:
        re.compile(regex)
    except re.error as exc:
        raise DiracxError(field, f"not a valid regular expression ({exc})") from None
    return regex


def _holds(word: str, operator: str, value) -> bool:
    """Whether a state's DIRAC name satisfies the condition (decided in Python)."""
    if operator in ("like", "not like", "regex"):
        found = re.search(value, word) is not None
        return found != (operator == "not like")
    return {
        "eq": lambda: word == value,
        "neq": lambda: word != value,
        "gt": lambda: word > value,
        "lt": lambda: word < value,
        "in": lambda: word in value,
        "not in": lambda: word not in value,
    }[operator]()


def condition(spec, field: str) -> tuple[Column, Q | dict]:
    """One search condition: (its column, a Q on the status, or the lookup on the column's
    alias as {"lookup": ..., "value": ..., "negate": bool, "cast": bool})."""
    if not isinstance(spec, dict):
        raise DiracxError(field, "must be an object with parameter, operator and value")
    operator = spec.get("operator")
    if operator not in SCALAR + VECTOR:
        raise DiracxError(f"{field}.operator", f"must be one of {', '.join(SCALAR + VECTOR)}")
    key = "values" if operator in VECTOR else "value"
    unknown = sorted(set(spec) - {"parameter", "operator", key})
    if unknown:
        raise DiracxError(f"{field}.{text(unknown[0], field, 100)}", "unknown field")
    col = column(spec.get("parameter"), f"{field}.parameter")
    if key not in spec:
        raise DiracxError(f"{field}.{key}", "required")
    raw = spec[key]
    if operator in VECTOR:
        value = [
            _value(col, v, f"{field}.values[{i}]")
            for i, v in enumerate(_list(raw, f"{field}.values", MAX_VALUES))
        ]
    elif operator in ("like", "not like", "regex"):
        value = _pattern(raw, f"{field}.value", operator)
    else:
        value = _value(col, raw, f"{field}.value")
    if col.word is not None:
        if col.name == "Status" and operator in ("eq", "neq", *VECTOR):
            for i, v in enumerate(value if operator in VECTOR else [value]):
                if v not in vocabularies.DIRAC_STATUSES:
                    where = f"{field}.values[{i}]" if operator in VECTOR else f"{field}.value"
                    raise DiracxError(where, f"{v!r} is not a DIRAC job status")
        states = [s for s in lifecycle.STATES if _holds(col.word(s), operator, value)]
        return col, Q(status__in=states)
    lookup = {
        "eq": "exact",
        "neq": "exact",
        "gt": "gt",
        "lt": "lt",
        "like": "regex",
        "not like": "regex",
        "regex": "regex",
        "in": "in",
        "not in": "in",
    }[operator]
    return col, {
        "lookup": lookup,
        "value": value,
        "negate": operator in ("neq", "not like", "not in"),
        "cast": lookup == "regex" and col.kind != "text",
    }


def _filtered(user, conditions: list) -> tuple:
    """The jobs `user` may see that satisfy every condition, with the aliases they annotate."""
    qs = Job.objects.visible_to(user)
    annotated: set[str] = set()
    for i, spec in enumerate(_list(conditions, "search", MAX_CONDITIONS)):
        col, rule = condition(spec, f"search[{i}]")
        if isinstance(rule, Q):
            qs = qs.filter(rule)
            continue
        name = _alias(col.name) + ("_text" if rule["cast"] else "")
        if name not in annotated:
            expression = col.expression()
            if rule["cast"]:  # a pattern matches a number's or a time's text
                expression = Cast(expression, TextField())
            qs = qs.annotate(**{name: expression})
            annotated.add(name)
        q = Q(**{f"{name}__{rule['lookup']}": rule["value"]})
        qs = qs.exclude(q) if rule["negate"] else qs.filter(q)
    return qs, annotated


def _with(qs, annotated: set[str], columns) -> object:
    missing = {_alias(c.name): c.expression() for c in columns if _alias(c.name) not in annotated}
    return qs.annotate(**missing) if missing else qs


def _rows(rows, names: list[str]) -> list[dict]:
    return [{name: row[_alias(name)] for name in names} for row in rows]


def _evaluated(fn):
    """Run the query; a pattern PostgreSQL refuses that Python accepted is the client's 400."""
    try:
        with transaction.atomic():
            return fn()
    except DataError as exc:
        message = str(exc).strip().splitlines()[0]
        raise DiracxError("search", f"the database refused a condition ({message})") from None


@dataclass
class Page:
    rows: list[dict]
    total: int
    first: int  # the index of the first row among all matching


def search(user, body, page, per_page) -> Page:
    """A page of the jobs `user` may see, as DiracX's POST /api/jobs/search gives it."""
    body = _object(body, "body", {"parameters", "search", "sort", "distinct"})
    page = _page_number(page, "page")
    per_page = min(_page_number(per_page, "per_page"), MAX_PER_PAGE)
    wanted = body.get("parameters")
    if wanted is None:
        columns = list(COLUMNS.values())
    else:
        columns = [
            column(name, f"parameters[{i}]")
            for i, name in enumerate(_list(wanted, "parameters", len(COLUMNS) * 4))
        ]
        columns = list({c.name: c for c in columns}.values())
    distinct = body.get("distinct", False)
    if not isinstance(distinct, bool):
        raise DiracxError("distinct", "must be true or false")
    qs, annotated = _filtered(user, body.get("search") or [])
    order = []
    sorts = _list(body.get("sort") or [], "sort", len(COLUMNS))
    for i, spec in enumerate(sorts):
        if not isinstance(spec, dict) or set(spec) - {"parameter", "direction"}:
            raise DiracxError(f"sort[{i}]", "must be an object with parameter and direction")
        col = column(spec.get("parameter"), f"sort[{i}].parameter")
        direction = spec.get("direction", "asc")
        if direction not in ("asc", "desc"):
            raise DiracxError(f"sort[{i}].direction", "must be asc or desc")
        order.append(("-" if direction == "desc" else "") + _alias(col.name))
        if distinct and col not in columns:
            raise DiracxError(f"sort[{i}].parameter", "a distinct search sorts by its parameters")
        qs = _with(qs, annotated, [col])
        annotated.add(_alias(col.name))
    names = [c.name for c in columns]
    qs = _with(qs, annotated, columns)
    if distinct:
        qs = qs.values(*[_alias(n) for n in names]).distinct().order_by(*order)
    else:
        # Ties broken by id in the last direction asked (ascending by default): a stable page.
        last = "-id" if order and order[-1].startswith("-") else "id"
        qs = qs.order_by(*order, last).values(*[_alias(n) for n in names])
    first = per_page * (page - 1)
    total, rows = _evaluated(lambda: (qs.count(), list(qs[first : first + per_page])))
    return Page(rows=_rows(rows, names), total=total, first=first)


def _page_number(value, field: str) -> int:
    """A query parameter's page number or size: a positive integer (default: DiracX's)."""
    if value is None:
        return {"page": 1, "per_page": 100}[field]
    if not re.fullmatch(r"\d{1,9}", text(value, field, 20).strip()) or int(value) < 1:
        raise DiracxError(field, "must be a positive integer")
    return int(value)


def summary(user, body) -> list[dict]:
    """How many jobs `user` may see per value of the grouping columns (POST /api/jobs/summary)."""
    body = _object(body, "body", {"grouping", "search"})
    if "grouping" not in body:
        raise DiracxError("grouping", "required")
    grouping = _list(body["grouping"], "grouping", len(COLUMNS))
    if not grouping:
        raise DiracxError("grouping", "must name at least one job parameter")
    columns = [column(name, f"grouping[{i}]") for i, name in enumerate(grouping)]
    columns = list({c.name: c for c in columns}.values())
    names = [c.name for c in columns]
    if not body.get("search") and set(names) <= set(COUNTED):
        return _counted(user, names)
    qs, annotated = _filtered(user, body.get("search") or [])
    qs = _with(qs, annotated, columns)
    aliases = [_alias(n) for n in names]
    qs = qs.order_by().values(*aliases).annotate(dx_count=Count("id")).order_by(*aliases)
    rows = _evaluated(lambda: list(qs))
    return [{**{n: row[_alias(n)] for n in names}, "count": row["dx_count"]} for row in rows]


# Columns a summary with no search reads from the job counts the mover keeps
# (matcher/job_counts.py), not from the job table: (the count key, its value in DIRAC's words).
COUNTED: dict[str, tuple[str | None, Callable[[object], object]]] = {
    "Status": ("status", lambda state: vocabularies.dirac_status(str(state))),
    "MinorStatus": ("status", lambda state: vocabularies.dirac_minor_status(str(state))),
    "Site": ("site", lambda site: site or "ANY"),
    "Owner": ("owner_id", lambda pk: pk),
    "OwnerGroup": ("owner_group_id", lambda pk: pk),
    "VO": (None, lambda _: settings.GRID_VO),
    "JobType": (None, lambda _: "User"),
}


def _counted(user, names: list[str]) -> list[dict]:
    from django.contrib.auth import get_user_model

    from matcher import job_counts
    from shares.models import GridGroup

    keys = tuple(dict.fromkeys(k for k, _ in (COUNTED[n] for n in names) if k is not None))
    found = job_counts.counts(user, keys or ("status",))
    owners = groups = {}
    if "Owner" in names:
        ids = {key[keys.index("owner_id")] for key in found}
        owners = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    if "OwnerGroup" in names:
        ids = {key[keys.index("owner_group_id")] for key in found}
        groups = dict(GridGroup.objects.filter(pk__in=ids).values_list("pk", "name"))
    named = {"owner_id": owners, "owner_group_id": groups}
    totals: dict[tuple, int] = {}
    for key, n in found.items():
        values = dict(zip(keys, key, strict=True))
        row = []
        for name in names:
            k, word = COUNTED[name]
            value = values.get(k) if k else None
            row.append(named[k].get(value, value) if k in named else word(value))
        totals[tuple(row)] = totals.get(tuple(row), 0) + n
    return [{**dict(zip(names, row, strict=True)), "count": n} for row, n in sorted(totals.items())]
