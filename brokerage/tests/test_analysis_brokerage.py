"""Analysis job brokerage (docs/developer-guide.md, PanDA brokerage): each
throttle, each filter, each stabilizer quantity and both weights, with numbers by hand."""

from collections import Counter
from datetime import timedelta

import pytest

from brokerage import analysis
from brokerage.services.analysis import ANALYSIS_PARAMS
from brokerage.tests.factories import NOW, params, queue, storage, task
from core import gdpconfig


def aparams(**overrides):
    p = params()
    p.update({n: gdpconfig.REGISTRY[n].default for n in ANALYSIS_PARAMS})
    p.update(overrides)
    return p


def actx(**kw):
    fields = {
        "nucleus": None,
        "links": {},
        "nucleus_queued_files": 0,
        "locality": {},
        "totals": (0.0, 0),
        "now": NOW,
        "params": aparams(),
        "n_events": 100,
        "input_mb_per_job": 0.0,
        "n_jobs": 10,
    }
    fields.update(kw)
    return analysis.AnalysisContext(**fields)


def aqueue(name="ANALY_Q", pk=1, **kw):
    q = queue(name, queue_type="analysis", **kw)
    q.pk = pk
    return q


def atask(**kw):
    kw.setdefault("kind", "analysis")
    kw.setdefault("gshare", "User Analysis")
    return task(**kw)


def one(t, q, ctx, with_locality=True):
    decision, persistent, stab = analysis.broker_analysis(t, [q], ctx, with_locality)
    [c] = decision.candidates
    return c, persistent, stab


# --- throttles ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "caps", "expected"),
    [
        ({"running_jobs": 101}, {"CAP_RUNNING_USER_JOBS": 100}, "running_jobs"),
        ({"running_jobs": 100}, {"CAP_RUNNING_USER_JOBS": 100}, None),
        ({"queued_jobs": 201}, {"CAP_RUNNING_USER_JOBS": 100}, "queued_jobs"),
        ({"queued_jobs": 200}, {"CAP_RUNNING_USER_JOBS": 100}, None),
        ({"running_cores": 51}, {"CAP_RUNNING_USER_CORES": 50}, "running_cores"),
        ({"queued_cores": 101}, {"CAP_RUNNING_USER_CORES": 50}, "queued_cores"),
        ({"queued_cores": 100}, {"CAP_RUNNING_USER_CORES": 50}, None),
        ({"running_jobs": 10**6}, {}, None),  # caps unset (0): off
        ({"disk_used_gb": 10.5, "disk_quota_gb": 10.0}, {}, "disk_quota"),
        ({"disk_used_gb": 10.0, "disk_quota_gb": 10.0}, {}, None),
    ],
)
def test_each_user_throttle_holds_just_past_its_limit(usage, caps, expected):
    held = analysis.throttle(atask(), analysis.Usage(**usage), aparams(**caps))
    assert (held["throttle"] if held else None) == expected


def test_a_working_group_task_is_held_to_the_group_caps_not_the_users():
    usage = analysis.Usage(running_jobs=150)
    caps = aparams(CAP_RUNNING_USER_JOBS=100, CAP_RUNNING_GROUP_JOBS=200)
    assert analysis.throttle(atask(working_group="AP_Higgs"), usage, caps) is None
    held = analysis.throttle(atask(), usage, caps)
    assert held["throttle"] == "running_jobs" and held["CAP_RUNNING_USER_JOBS"] == 100
    caps["CAP_RUNNING_GROUP_JOBS"] = 149
    held = analysis.throttle(atask(working_group="AP_Higgs"), usage, caps)
    assert held["CAP_RUNNING_GROUP_JOBS"] == 149 and held["working_group"] == "AP_Higgs"


@pytest.mark.parametrize(
    ("task_class", "usage_pct", "hi_slots", "throttled"),
    [
        ("C", 90.0, 0, False),
        ("C", 90.1, 0, True),
        ("B", 95.0, 0, False),
        ("B", 95.1, 0, True),
        # A: limit max(1000 / 500, 1) × 100 = 200 %
        ("A", 200.0, 500, False),
        ("A", 200.1, 500, True),
        # A with 5000 hi slots: max(0.2, 1) × 100 = 100 %
        ("A", 100.1, 5000, True),
        ("A", 10**6, 0, False),  # no running slots at hi sites: no limit
        ("S", 10**6, 1, False),
    ],
)
def test_the_user_analysis_share_throttles_lower_classes_first(
    task_class, usage_pct, hi_slots, throttled
):
    usage = analysis.Usage(share_usage_pct=usage_pct, hi_site_slots=hi_slots)
    held = analysis.throttle(atask(task_class=task_class), usage, aparams())
    assert (held is not None) is throttled
    if held:
        assert held["throttle"] == "user_analysis_share"


def test_other_shares_are_immune_to_the_user_analysis_throttle():
    usage = analysis.Usage(share_usage_pct=500.0)
    assert (
        analysis.throttle(atask(gshare="Group Analysis", task_class="C"), usage, aparams()) is None
    )


# --- candidates and filters --------------------------------------------------------------------


def test_candidates_are_analysis_or_unified_queues_within_included_and_not_excluded_sites():
    qs = [
        aqueue("ANALY_A", 1),
        aqueue("ANALY_B", 2),
        queue("PROD_C", queue_type="production"),
        queue("UNI_D", queue_type="unified"),
    ]
    qs[3].pk = 4
    names = lambda d: sorted(c.name for c in d.candidates)  # noqa: E731
    d, _, _ = analysis.broker_analysis(atask(), qs, actx())
    assert names(d) == ["ANALY_A", "ANALY_B", "UNI_D"]
    d, _, _ = analysis.broker_analysis(atask(excluded_site="ANALY_*"), qs, actx())
    assert names(d) == ["UNI_D"]
    d, _, _ = analysis.broker_analysis(atask(included_site="ANALY_B,UNI_D"), qs, actx())
    assert names(d) == ["ANALY_B", "UNI_D"]


PERSISTENT = [
    ("status", {}, {"status": "brokeroff"}, {}),
    ("data_locality", {}, {}, {"has_input": True, "local_data": {"ANALY_Q": False}}),
    ("diskio", {"disk_io": 600.0}, {"diskio_per_core": 501.0, "max_diskio": 500.0}, {}),
    ("core_count", {"core_count": 8}, {}, {}),
    ("vp", {"avoid_vp": True}, {"catchall": "vp"}, {}),
    ("software", {"release": "Athena-24.0.30"}, {"releases": ["AUTO"]}, {}),
    ("memory", {"ram_count": 2000}, {"maxrss": 1000}, {}),
    ("disk", {"work_disk_count": 3000.0}, {"maxwdir": 2000}, {}),
    ("storage_space", {}, {"output_storage": storage(space_free=100.0)}, {}),
    ("endpoints", {}, {"input_storage": storage(blacklisted=True)}, {}),
    ("walltime", {"walltime": 3600}, {"maxtime": 50}, {}),
    ("scout_maxtime", {"merge": True, "walltime": 3600}, {"maxtime": 3600}, {}),
    ("no_pilot", {}, {"last_pilot": NOW - timedelta(hours=4)}, {}),
]


@pytest.mark.parametrize(
    ("check", "t_kw", "q_kw", "c_kw"), PERSISTENT, ids=[p[0] for p in PERSISTENT]
)
def test_each_persistent_filter_removes_a_queue_and_flags_a_persistent_issue(
    check, t_kw, q_kw, c_kw
):
    c, persistent, _ = one(atask(**t_kw), aqueue(**q_kw), actx(**c_kw))
    assert c.removed_by == check, (c.removed_by, c.values)
    assert persistent
    c, _, _ = one(atask(), aqueue(), actx())
    assert c.removed_by == ""


def test_memory_for_mb_tasks_does_not_scale_with_cores():
    # MB: (0 + 2000) × 0.9 = 1800 on an 8-core queue; MBPerCore would be 14400.
    q = aqueue(core_count=8, maxrss=300)  # 300 × 8 = 2400 MB
    c, _, _ = one(atask(ram_count=2000, ram_unit="MB", core_count=8), q, actx())
    assert c.removed_by == ""
    c, _, _ = one(atask(ram_count=2000, ram_unit="MBPerCore", core_count=8), q, actx())
    assert c.removed_by == "memory" and c.values["expected_mb"] == 14400.0


def test_the_locality_check_is_suppressed_for_high_priority_low_io_or_stale_tasks():
    ctx = actx(has_input=True, params=aparams(IO_INTENSITY_CUTOFF_USER=100.0))
    assert analysis.locality_suppressed(atask(priority=2000), ctx)
    assert analysis.locality_suppressed(atask(io_intensity=100.0), ctx)
    assert analysis.locality_suppressed(atask(io_intensity=101.0), ctx) is None
    ctx = actx(params=aparams(DATA_CHECK_TIMEOUT_USER=24.0), last_success=NOW - timedelta(hours=25))
    assert analysis.locality_suppressed(atask(io_intensity=500.0), ctx)
    ctx.last_success = NOW - timedelta(hours=23)
    assert analysis.locality_suppressed(atask(io_intensity=500.0), ctx) is None


def test_a_queue_with_too_many_failed_or_closed_jobs_of_the_task_is_skipped_for_now():
    done = {1: Counter(failed=4, closed=2, finished=3)}  # 6 ≥ max(2 × 3, 5)
    c, persistent, _ = one(atask(), aqueue(), actx(task_done=done))
    assert c.removed_by == "bad_jobs" and c.values["limit"] == 6 and not persistent
    done = {1: Counter(failed=4, finished=3)}  # 4 < 6
    assert one(atask(), aqueue(), actx(task_done=done))[0].removed_by == ""


def test_a_queue_with_more_queued_than_twice_max_20_running_is_skipped_for_now():
    c, _, _ = one(atask(), aqueue(counts={"activated": 41, "running": 5}), actx())
    assert c.removed_by == "queue_length" and c.values == {"queued": 41, "limit": 40}
    assert one(atask(), aqueue(counts={"activated": 40, "running": 5}), actx())[0].removed_by == ""


# --- the Analysis Stabilizer -------------------------------------------------------------------


def test_the_stabilizer_never_throttles_a_short_queue():
    p = aparams()
    assert not analysis.stabilizer(99, 1000, 0.0, 99, 0, 1, p)["throttlable"]  # < 100
    # 150 < 8 h × 20 jobs/h = 160
    assert not analysis.stabilizer(150, 10, 20.0, 150, 0, 1, p)["throttlable"]
    assert analysis.stabilizer(170, 10, 20.0, 150, 0, 1, p)["throttlable"]


def test_the_stabilizer_quantities_worked_by_hand():
    # nQ 400, nR 300, trr 30/h, the user: 50 queued, 60 running, 4 users at the queue.
    st = analysis.stabilizer(400, 300, 30.0, 50, 60, 4, aparams())
    # nQ_max = max(100, 2.0 × 300, 12 × 30) = 600
    assert st["nQ_max"] == 600
    # percentage = max(60/300, 1/4) = 0.25
    assert st["percentage"] == 0.25
    # max_q_len = max(5, 0.05 × 300, 600 × 0.25) = 150
    assert st["max_q_len"] == 150
    assert st["throttlable"] and not st["too_many"]
    st = analysis.stabilizer(400, 300, 30.0, 151, 60, 4, aparams())
    assert st["too_many"]


def test_the_stabilizer_removes_a_queue_where_the_user_already_queues_enough():
    q = aqueue(counts={"activated": 400, "running": 300})
    ctx = actx(user_counts={1: Counter(activated=151, running=60)}, n_users={1: 4}, trr={1: 30.0})
    c, _, stab = one(atask(), q, ctx)
    assert c.removed_by == "stabilizer" and c.values["max_q_len"] == 150
    assert stab["ANALY_Q"]["nQ_max"] == 600


# --- weights -----------------------------------------------------------------------------------


def test_the_original_basic_weight_worked_by_hand():
    # (running 30 + 1) / (activated 5 + assigned 2 + starting 1 + defined 1 + 1) = 31 / 10
    q = aqueue(counts={"running": 30, "activated": 5, "assigned": 2, "starting": 1, "defined": 1})
    c, _, _ = one(atask(), q, actx())
    assert c.weight == pytest.approx(3.1) and c.factors["formula"] == "original"


@pytest.mark.parametrize(
    ("task_class", "site_class", "expected"),
    [
        ("A", "hi", 10),
        ("A", "mid", 0.1),
        ("A", "lo", 0.01),
        ("S", "hi", 10),
        ("B", "hi", 0.01),
        ("B", "mid", 10),
        ("B", "lo", 0.1),
        ("C", "hi", 0.01),
        ("C", "mid", 0.1),
        ("C", "lo", 10),
    ],
)
def test_the_site_class_table_of_the_new_weight(task_class, site_class, expected):
    assert analysis.site_class_weight(task_class, site_class, 10, 0.1, 0.01) == expected


def test_the_new_basic_weight_worked_by_hand():
    # Two queues, max_q_len 100 and 50, the user queues 20 and 10 there, N_j = 10 jobs.
    # Σ room = 80 + 40 = 120; Wq = (80 − 10/2) / (120 − 10) = 75/110 and (40 − 5)/110 = 35/110.
    # A class-A task: Ws = 10 at the hi site, ε1 = 0.1 at the mid site.
    hi, mid = aqueue("HI", 1, site_class="hi"), aqueue("MID", 2, site_class="mid")
    rows = [(hi, {"max_q_len": 100, "nQ_user": 20}), (mid, {"max_q_len": 50, "nQ_user": 10})]
    (w_hi, f_hi), (w_mid, _) = analysis.new_weights(atask(task_class="A"), rows, 10, aparams())
    assert f_hi["Wq"] == pytest.approx(75 / 110, abs=1e-6)
    assert w_hi == pytest.approx(10 * 75 / 110 + analysis.TINY)
    assert w_mid == pytest.approx(0.1 * 35 / 110 + analysis.TINY)
    # Another share: Ws = N_j everywhere.
    (w_hi, _), (w_mid, _) = analysis.new_weights(atask(gshare="Group"), rows, 10, aparams())
    assert w_hi / w_mid == pytest.approx(75 / 35)


def test_the_new_weight_is_used_only_behind_its_switch():
    ctx = actx(params=aparams(ANALY_NEW_BASIC_WEIGHT=True))
    c, _, _ = one(atask(), aqueue(site_class="hi"), ctx)
    assert c.factors["formula"] == "new"


def test_only_the_best_ten_analysis_queues_are_kept():
    qs = [aqueue(f"ANALY_{i:02d}", i + 1, counts={"running": i}) for i in range(12)]
    d, _, _ = analysis.broker_analysis(atask(), qs, actx())
    assert d.chosen == [f"ANALY_{i:02d}" for i in range(11, 1, -1)]
    assert {c.name for c in d.candidates if c.removed_by == "low_weight"} == {
        "ANALY_00",
        "ANALY_01",
    }


def test_an_overloaded_vp_queue_is_skipped_even_without_avoid_vp():
    # 30 queued, none running: overloaded whatever the grand ratio.
    q = aqueue(catchall="vp", counts={"activated": 30})
    c, _, _ = one(atask(), q, actx())
    assert c.removed_by == "vp" and c.values["VP_overloaded"] is True
    # 30 queued, 100 running at the VP queue, and 30/100 over all queues: not overloaded.
    q = aqueue(catchall="vp", counts={"activated": 30, "running": 100})
    assert one(atask(), q, actx())[0].removed_by == ""
