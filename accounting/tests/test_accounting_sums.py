"""The bins summed per hour and key (AccountingSum), which the page and the API read: they agree
with the bins whatever writes them (the cycle, a plain insert, an update, a delete, a user's
removal); a window drawn per day shows the totals the hourly rows give; past the palette the
charts draw the quietest keys as one trace, every bucket's sum unchanged; the API's rows are its
serializer's."""

import json
import re
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db.models import F

from accounting import report
from accounting.models import AccountingBin, AccountingMark, AccountingSum
from api.accounting.views import AccountingRowSerializer
from core import clock
from core.cycles import run_cycle
from matcher.models import Job
from shares.models import User
from web.accounting import charts

pytestmark = pytest.mark.django_db

FIGURES = ("running_minutes", "finished", "failed", "cpu_seconds", "wall_seconds")


def _hour(ago: int = 0):
    return clock.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=ago)


def _from_bins() -> dict:
    """What the sums must be: the bins summed per grouping, hour and key, and counted."""
    out: dict = defaultdict(lambda: [0, 0.0, 0, 0, 0.0, 0.0])
    for b in AccountingBin.objects.all():
        keys = {"group": (b.group_id, None, "", ""), "user": (None, b.user_id, "", ""),
                "site": (None, None, b.site, ""), "ce": (None, None, "", b.ce)}  # fmt: skip
        for grouping, key in keys.items():
            s = out[(grouping, b.hour, *key)]
            s[0] += 1
            for i, f in enumerate(FIGURES, start=1):
                s[i] += getattr(b, f)
    return {k: pytest.approx(v) for k, v in out.items()}


def _sums() -> dict:
    return {
        (s.grouping, s.hour, s.group_id, s.user_id, s.site, s.ce): [s.bins]
        + [getattr(s, f) for f in FIGURES]
        for s in AccountingSum.objects.all()
    }


def _bin(users, name, ago=1, site="LCG.CERN.ch", ce="ce504.cern.ch", **figures):
    user = users[name]
    return AccountingBin.objects.create(
        hour=_hour(ago), group=user.grid_groups.first(), user=user, site=site, ce=ce, **figures
    )


def test_the_sums_agree_with_the_bins_through_inserts_updates_and_deletes(users):
    _bin(users, "alice", running_minutes=120, finished=3, failed=1, cpu_seconds=7200)
    _bin(users, "bob", site="LCG.PIC.es", ce="ce07.pic.es", running_minutes=60, finished=1)
    _bin(users, "alice", ago=2, site="", ce="", running_minutes=30, wall_seconds=900)
    carol = _bin(users, "carol", ago=2, finished=2)
    assert _sums() == _from_bins()

    AccountingBin.objects.filter(user=users["alice"]).update(finished=F("finished") + 4)
    carol.site, carol.ce = "LCG.RAL.uk", "arc-ce01.gridpp.rl.ac.uk"  # a bin moving key
    carol.save()
    assert _sums() == _from_bins()

    AccountingBin.objects.filter(user=users["bob"]).delete()
    assert _sums() == _from_bins()
    assert not AccountingSum.objects.filter(site="LCG.PIC.es").exists()  # its last bin went


def test_a_removed_users_bins_leave_the_sums_as_the_remaining_bins_make_them(users):
    _bin(users, "alice", running_minutes=120, finished=3)
    _bin(users, "bob", running_minutes=60, finished=1)
    User.objects.get(username="bob").delete()
    assert _sums() == _from_bins()
    assert AccountingSum.objects.get(grouping="site").finished == 3


def test_the_cycle_s_bins_are_summed_as_they_grow(submit):
    job = submit("alice")
    Job.objects.filter(pk=job.pk).update(status="running", site="LCG.CERN.ch",
                                         grid_ce="ce504.cern.ch")  # fmt: skip
    for _ in range(2):
        assert run_cycle("accounting").status == "success"
    assert AccountingBin.objects.get().running_minutes > 0
    assert _sums() == _from_bins()


def _month(users, n_users=0):
    """Bins over the last 30 days, the data sampled up to 20 minutes into the current hour's
    predecessor (so that the hour the data ends in counts part of its hour)."""
    group = users["alice"].grid_groups.first()
    extra = [User.objects.create(username=f"user{i:02d}") for i in range(n_users)]
    owners = [users["alice"], users["bob"], *extra]
    for ago in (0, 1, 2, 30, 200, 700):
        for i, user in enumerate(owners):
            AccountingBin.objects.create(hour=_hour(ago), group=group, user=user,
                                         site=f"site{i % 3}", running_minutes=10.0 * (i + 1),
                                         finished=i, failed=ago % 3, cpu_seconds=36.0 * i,
                                         wall_seconds=72.0 * (i + 1))  # fmt: skip
    AccountingMark.objects.create(sampled_at=_hour(1) + timedelta(minutes=20))
    return owners


@pytest.mark.parametrize("group_by", ["user", "site", "group"])
def test_a_window_drawn_per_day_totals_what_its_hourly_rows_total(users, group_by):
    _month(users, n_users=3)
    covered = report.coverage(720)
    hourly = report.totals(report.rows(720, group_by, covered), covered)
    daily = report.totals(report.daily(720, group_by, covered), covered)
    assert [t.key for t in daily] == [t.key for t in hourly]
    for d, h in zip(daily, hourly, strict=True):
        assert vars(d) == pytest.approx(vars(h))


def _figures(html: str) -> list[dict]:
    found = re.findall(r'<script type="application/json" data-chart="[^"]+">(.*?)</script>', html)
    return [json.loads(f) for f in found]


def _per_x(figure: dict) -> dict:
    out: dict = defaultdict(float)
    for trace in figure["data"]:
        for x, y in zip(trace["x"], trace["y"], strict=True):
            out[x] += y
    return dict(out)


def test_past_the_palette_the_quietest_keys_are_drawn_as_one_trace_of_the_same_sums(client, users):
    owners = _month(users, n_users=charts.SHOWN_KEYS + 1)  # two users more than colours
    client.force_login(users["alice"])
    html = client.get("/accounting/?hours=720&group_by=user").content.decode()
    assert html.count('<tr data-key="') == len(owners)  # the table keeps every key
    running, finished, *_ = _figures(html)
    names = [t["name"] for t in finished["data"]]
    assert len(names) == charts.SHOWN_KEYS + 1 and "3 others" in names
    covered = report.coverage(720)
    rows = report.rows(720, "user", covered)
    every_key = charts.per_bucket_figure(rows, lambda r: r.finished, "jobs finished", "day")
    assert _per_x(finished) == pytest.approx(_per_x(json.loads(every_key.to_json())))
    every_key = charts.running_figure(rows, covered, "day")
    assert _per_x(running) == pytest.approx(_per_x(json.loads(every_key.to_json())))


def test_the_api_rows_are_what_its_row_serializer_makes_of_them(client, users):
    _month(users)
    client.force_login(users["alice"])
    answer = client.get("/api/v1/accounting/?hours=720&group_by=site").json()
    expected = AccountingRowSerializer(report.rows(720, "site"), many=True).data
    assert answer["rows"] == json.loads(json.dumps(expected)) and len(answer["rows"]) == 12
