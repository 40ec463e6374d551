"""The charts read true: every figure of every page, drawn by the pages
themselves (home, shares, accounting by group) and by each chart builder with every state,
kind and group in it, gives a job state, a pilot state, a kind of timeout and a group one colour
everywhere, and no two of them one colour in the same chart; a chart with nothing to draw says
"no data in this window"; no axis or hover label reads in SI suffixes or runs of decimals; and
the accounting's average running jobs is over the time its data covers, not the whole window."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import plotly.basedatatypes
import pytest
from plotly.io.json import to_json_plotly

from accounting import report
from accounting.models import AccountingBin, AccountingMark
from core import clock
from matcher.models import Job, JobStatus
from pilots.models import PilotStatus
from shares.models import CorrectionRecord, GridGroup, UsageSample, UsageTick
from timeouts import rules
from web.accounting import charts as accounting_charts
from web.brokerage import charts as brokerage_charts
from web.classads import charts as classads_charts
from web.core import chart_style as style
from web.matcher import charts as matcher_charts
from web.monitoring import charts as monitoring_charts
from web.pilots import charts as pilot_charts
from web.shares import charts as share_charts
from web.timeouts import charts as timeout_charts

pytestmark = pytest.mark.django_db

JOB_STATES = [s.value for s in JobStatus]
PILOT_STATES = [s.value for s in PilotStatus]
TIMEOUT_TITLES = {name: rules.RULE[name].title for name in rules.RULE_NAMES}


@pytest.fixture
def drawn(monkeypatch):
    """drawn() -> every figure the pages placed on themselves so far, as plotly's JSON (each
    recorded as it is serialised: every way of serialising a figure goes through to_dict)."""
    figures: dict[int, object] = {}  # id -> the figure, kept alive so that no id is reused
    real = plotly.basedatatypes.BaseFigure.to_dict

    def to_dict(self):
        figures.setdefault(id(self), self)
        return real(self)

    monkeypatch.setattr(plotly.basedatatypes.BaseFigure, "to_dict", to_dict)
    return lambda: [json.loads(to_json_plotly(real(f))) for f in list(figures.values())]


def _hour(ago: int):
    return clock.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=ago)


def _grid_of_every_group(users):
    """Samples, corrections, accounting and waiting jobs of every group, for the pages."""
    groups = list(GridGroup.objects.order_by("pk"))
    for minutes in (30, 20, 10):
        tick = UsageTick.objects.create(at=clock.now() - timedelta(minutes=minutes))
        for i, g in enumerate(groups):
            UsageSample.objects.create(tick=tick, group=g, running=float(i + 1))
            CorrectionRecord.objects.create(at=tick.at, instance="c", group=g, factor=1 + i / 10)
    for g in groups:
        user = g.members.first() or users["admin"]
        for ago in (2, 1):
            AccountingBin.objects.create(
                hour=_hour(ago),
                group=g,
                user=user,
                running_minutes=60,
                finished=2,
                failed=1,
                cpu_seconds=3000,
                wall_seconds=3600,
            )


def _every_builder() -> list:
    now = clock.now()
    times = [now - timedelta(minutes=m) for m in (30, 20, 10)]
    every_state = {s: (times, [i, i + 1, i + 2]) for i, s in enumerate(JOB_STATES)}
    sites = [
        {"site": "LCG.CERN.ch", "counts": {s: i + 1 for i, s in enumerate(PILOT_STATES)}},
        {"site": "LCG.PIC.es", "counts": {s: 1 for s in PILOT_STATES}},
    ]
    left = [(name, 3600.0 * (i + 1)) for i, name in enumerate(rules.RULE_NAMES)]
    acted = [(_hour(1), name, i + 1) for i, name in enumerate(rules.RULE_NAMES)]
    return [
        matcher_charts.jobs_by_status_figure({s: i + 1 for i, s in enumerate(JOB_STATES)}),
        matcher_charts.states_over_time_figure(every_state),
        pilot_charts.pilots_per_site_figure(sites),
        timeout_charts.time_left_figure(left, rules.RULE_NAMES, TIMEOUT_TITLES),
        timeout_charts.actions_figure(acted, rules.RULE_NAMES, TIMEOUT_TITLES),
        monitoring_charts.failures_figure([(times[0], 3)], "hour", times[0], now),
    ]


def _colours_by_name(fig: dict) -> dict[str, set[str]]:
    """Each series' (or each bar's, where one trace colours its bars) name and colour."""
    out: dict[str, set[str]] = defaultdict(set)
    for trace in fig["data"]:
        marker = (trace.get("marker") or {}).get("color")
        line = (trace.get("line") or {}).get("color")
        if isinstance(marker, list):
            for name, colour in zip(trace["x"], marker, strict=True):
                out[str(name)].add(colour)
        elif trace.get("name"):
            out[trace["name"].removesuffix(" expected")].add(marker or line)
    return out


def _concepts(groups: list[str]) -> dict[str, set[str]]:
    return {
        "job state": set(JOB_STATES),
        "pilot state": set(PILOT_STATES),
        "timeout kind": set(TIMEOUT_TITLES.values()),
        "group": set(groups),
    }


def test_each_state_kind_and_group_has_one_colour_on_every_chart_and_its_own_in_each(
    client, users, submit, drawn
):
    _grid_of_every_group(users)
    for state in JOB_STATES:  # a job in each state for the home page's counts
        Job.objects.filter(pk=submit("alice").pk).update(status=state)
    client.force_login(users["admin"])
    for path in ("/", "/shares/", "/accounting/?hours=24&group_by=group"):
        assert client.get(path).status_code == 200, path
    assert len(drawn()) >= 6  # home: states, shares; shares: two; accounting: five
    figures = drawn() + [f.to_plotly_json() for f in _every_builder()]
    groups = list(GridGroup.objects.values_list("name", flat=True))
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    charts_of: dict[str, int] = defaultdict(int)
    for fig in figures:
        named = _colours_by_name(fig)
        for concept, members in _concepts(groups).items():
            mine = {n: c for n, c in named.items() if n in members}
            if len(mine) < 2 or not set(named) <= members | {"(none)"}:
                continue  # not a chart of this concept
            charts_of[concept] += 1
            colours = [c for cs in mine.values() for c in cs]
            assert all(len(cs) == 1 for cs in mine.values()), (concept, mine)
            assert len(set(colours)) == len(colours), f"two {concept}s share a colour: {mine}"
            for name, cs in mine.items():
                seen[concept][name] |= cs
    assert charts_of["job state"] >= 2 and charts_of["pilot state"] >= 1
    assert charts_of["timeout kind"] >= 2 and charts_of["group"] >= 4
    for concept, names in seen.items():
        for name, colours in names.items():
            assert len(colours) == 1, f"{concept} {name} is drawn in {colours}"
    assert seen["job state"].keys() == set(JOB_STATES)
    assert seen["pilot state"].keys() == set(PILOT_STATES)
    assert seen["timeout kind"].keys() == set(TIMEOUT_TITLES.values())
    assert seen["group"].keys() >= set(groups) - {"lhcb_pilot"}


def test_the_tables_give_every_state_and_kind_a_colour_of_its_own():
    for table, names in (
        (style.JOB_STATE_COLOURS, JOB_STATES),
        (style.PILOT_STATE_COLOURS, PILOT_STATES),
        (style.TIMEOUT_COLOURS, rules.RULE_NAMES),
    ):
        assert set(table) == set(names)
        assert len(set(table.values())) == len(table)
    assert style.PILOT_STATE_COLOURS["Aborted"] != style.PILOT_STATE_COLOURS["Submitted"]
    assert style.TIMEOUT_COLOURS["heartbeat"] != style.TIMEOUT_COLOURS["defined"]


@pytest.mark.parametrize(
    "build",
    [
        lambda: matcher_charts.states_over_time_figure({}),
        lambda: pilot_charts.pilots_per_site_figure([]),
        lambda: pilot_charts.director_figure([]),
        lambda: timeout_charts.time_left_figure([], rules.RULE_NAMES, TIMEOUT_TITLES),
        lambda: timeout_charts.actions_figure([], rules.RULE_NAMES, TIMEOUT_TITLES),
        lambda: share_charts.share_figure({"achieved": {}, "expected": {"lhcb_mc": 0.5}}),
        lambda: share_charts.corrections_figure({}),
        lambda: classads_charts.negotiation_figure([]),
        lambda: brokerage_charts.queue_weights_figure([]),
        lambda: accounting_charts.cpu_efficiency_figure([]),
    ],
)
def test_a_chart_with_nothing_to_draw_says_no_data_in_this_window(build):
    fig = build().to_plotly_json()
    texts = [a.get("text") for a in fig["layout"].get("annotations", ())]
    assert texts == ["no data in this window"]
    assert fig["layout"]["xaxis"]["visible"] is False and fig["layout"]["yaxis"]["visible"] is False


def _axes(fig: dict) -> dict[str, dict]:
    return {k: v for k, v in fig["layout"].items() if k[1:].startswith("axis") and v}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def test_no_axis_or_hover_reads_in_si_suffixes_or_runs_of_decimals(client, users, drawn):
    _grid_of_every_group(users)
    AccountingBin.objects.update(cpu_seconds=0.002, wall_seconds=0.004)  # 0.00000056 h
    client.force_login(users["admin"])
    assert client.get("/accounting/?hours=24&group_by=group").status_code == 200
    html = client.get("/accounting/?hours=24&group_by=group").content.decode()
    assert "0.0000005556" not in html and "0.00000" not in html
    figures = drawn() + [f.to_plotly_json() for f in _every_builder()]
    numeric = 0
    for fig in figures:
        for name, axis in _axes(fig).items():
            if axis.get("type") in ("date", "category") or axis.get("visible") is False:
                continue
            ref = name[0] + name[5:]  # yaxis2 -> y2
            ticks = [t for t in fig["data"] if (t.get(f"{name[0]}axis") or name[0]) == ref]
            values = [v for t in ticks for v in t.get(name[0]) or () if not _number(v)]
            if values and "tickformat" not in axis:  # a date or category axis, typed by plotly
                continue
            numeric += 1
            for key in ("tickformat", "hoverformat"):
                assert key in axis, (name, axis)
                assert "s" not in axis[key] and "e" not in axis[key], (name, axis[key])
    assert numeric >= 10


def test_a_count_axis_has_one_tick_per_unit_while_its_counts_are_small():
    fig = matcher_charts.jobs_by_status_figure({"running": 1, "failed": 2}).to_plotly_json()
    assert fig["layout"]["yaxis"]["tickformat"] == ",d" and fig["layout"]["yaxis"]["dtick"] == 1


def test_the_accounting_average_is_over_the_time_its_data_covers(client, users):
    """Sampled for two full hours of a 30-day window, at 3 running jobs: 3 on average, not
    3 × 2 / 720."""
    alice = users["alice"]
    group = alice.grid_groups.get()
    for ago in (2, 1):
        AccountingBin.objects.create(hour=_hour(ago), group=group, user=alice, running_minutes=180)
    AccountingMark.objects.create(sampled_at=_hour(0), history_id=0)
    covered = report.coverage(720)
    assert covered.hours == pytest.approx(2.0)
    [total] = report.totals(report.rows(720, "user", covered), covered)
    assert total.running == pytest.approx(3.0)
    client.force_login(alice)
    html = client.get("/accounting/?hours=720&group_by=user").content.decode()
    row = '<a href="/jobs/?owner=alice">alice</a></td><td class="num">3.00</td>'
    assert row in html
    assert "average over 2.0 h sampled" in html


def test_the_daily_running_average_divides_by_the_hours_of_the_day_sampled():
    start = datetime(2026, 1, 1, 10, tzinfo=UTC)
    covered = report.Coverage(since=start, until=start + timedelta(hours=2))
    found = [report.Row(start + timedelta(hours=h), "alice", 4.0, 0, 0, 0.0, 0.0) for h in (0, 1)]
    fig = accounting_charts.running_figure(found, covered, "day", "user")
    assert list(fig.data[0].y) == [pytest.approx(4.0)]


def test_cpu_efficiency_is_cpu_over_wall_time_per_key():
    total = report.Total("alice", 0.0, 1, 0, cpu_hours=1.5, wall_hours=2.0)
    assert total.cpu_efficiency == pytest.approx(0.75)
    assert report.Total("bob", 0.0, 0, 0, 0.0, 0.0).cpu_efficiency is None


def test_a_state_badge_on_a_page_carries_its_states_chart_colour(client, users, submit):
    job = submit("alice")
    client.force_login(users["alice"])
    html = client.get("/jobs/").content.decode()
    assert f'<span class="status {job.status}">' in html
    colour = style.JOB_STATE_COLOURS[job.status]
    assert f".status.{job.status}{{box-shadow:inset 4px 0 0 {colour}}}" in html
    aborted = style.PILOT_STATE_COLOURS["Aborted"]
    assert f".status.aborted{{box-shadow:inset 4px 0 0 {aborted}}}" in html
