"""Production job brokerage (docs/developer-guide.md, PanDA brokerage):
each check removes a queue with the values it compared, and lets the queue next to the limit
through; the weight's factors match numbers worked out by hand."""

from datetime import timedelta

import pytest

from brokerage import production
from brokerage.network import LinkData
from brokerage.tests.factories import NOW, context, nucleus, params, queue, storage, task


def broker_one(t, q, ctx):
    decision = production.broker_jobs(t, [q], ctx)
    [c] = decision.candidates
    return c


def removed(t, q, ctx):
    return broker_one(t, q, ctx).removed_by


def test_the_baseline_queue_passes_every_check():
    c = broker_one(task(), queue(), context())
    assert c.removed_by == "" and c.weight > 0


# (check, failing (task, queue, ctx) overrides, passing overrides, a value the trace must show)
CASES = [
    (
        "status",
        ({}, {"status": "offline"}, {}),
        ({"site": "Q1"}, {"status": "offline"}, {}),
        ("status", "offline"),
    ),
    (
        "link_blocked",
        ({}, {}, {"links": {10: LinkData(closeness=-1)}}),
        ({}, {}, {"links": {10: LinkData(closeness=0)}}),
        ("closeness", -1),
    ),
    (
        "link_queued",
        ({}, {}, {"links": {10: LinkData(queued_files=151)}}),
        ({}, {}, {"links": {10: LinkData(queued_files=150)}}),
        ("queued_files", 151),
    ),
    (
        "nucleus_queued",
        ({}, {}, {"nucleus_queued_files": 10001}),
        ({}, {}, {"nucleus_queued_files": 10000}),
        ("files_to_nucleus", 10001),
    ),
    (
        "inactive",
        (
            {"priority": 800},
            {
                "counts": {"activated": 5, "running": 10},
                "last_start": NOW - timedelta(hours=2, seconds=1),
            },
            {},
        ),
        (
            {"priority": 799},
            {"counts": {"activated": 5, "running": 10}, "last_start": NOW - timedelta(hours=3)},
            {},
        ),
        ("activated", 5),
    ),
    (
        "opportunistic",
        ({"scout": True}, {"pledgedcpu": -1}, {}),
        ({}, {"pledgedcpu": -1}, {}),
        ("pledgedcpu", -1),
    ),
    (
        "zero_share",
        ({"processing_type": "reco"}, {"fairsharepolicy": "type=evgen:100%,type=any:0%"}, {}),
        ({"processing_type": "evgen"}, {"fairsharepolicy": "type=evgen:100%,type=any:0%"}, {}),
        ("matched", "type=any:0%"),
    ),
    (
        "move_input",
        ({"io_intensity": 201.0}, {}, {"totals": (10.0, 5)}),
        ({"io_intensity": 200.0}, {}, {"totals": (10.0, 5)}),
        ("missing_gb", 10.0),
    ),
    (
        "diskio",
        ({"disk_io": 600.0}, {"diskio_per_core": 501.0, "max_diskio": 500.0}, {}),
        ({"disk_io": 400.0}, {"diskio_per_core": 501.0, "max_diskio": 500.0}, {}),
        ("limit", 500.0),
    ),
    (
        "core_count",
        ({"core_count": 8}, {"core_count": 1}, {}),
        ({"core_count": 8}, {"core_count": 8}, {}),
        ("queue_coreCount", 1),
    ),
    (
        "software",
        ({"release": "Athena-24.0.30"}, {"releases": ["AUTO"]}, {}),
        ({"release": "Athena-24.0.30"}, {"releases": ["ANY"]}, {}),
        ("releases", ["AUTO"]),
    ),
    # (0 + 2000 × 1) × 0.9 = 1800 MB
    (
        "memory",
        ({"ram_count": 2000}, {"maxrss": 1799}, {}),
        ({"ram_count": 2000}, {"maxrss": 1800}, {}),
        ("expected_mb", 1800.0),
    ),
    (
        "direct_access",
        ({"direct_access_only": True}, {}, {}),
        ({"direct_access_only": True}, {"direct_access_lan": True}, {}),
        ("direct_access_lan", False),
    ),
    # 0 input + max(1536, 0) + max(300, 0) = 1836 MB
    ("disk", ({}, {"maxwdir": 1836}, {}), ({}, {"maxwdir": 1837}, {}), ("expected_mb", 1836.0)),
    (
        "storage_space",
        ({}, {"output_storage": storage(space_free=200.0)}, {}),
        ({}, {"output_storage": storage(space_free=200.5)}, {}),
        ("minimum_gb", 200.0),
    ),
    (
        "endpoints",
        ({}, {"input_storage": storage(blacklisted=True)}, {}),
        ({}, {"input_storage": storage(write_lan=False)}, {}),
        ("endpoints", ["input not readable over LAN"]),
    ),
    (
        "scout_maxtime",
        ({"scout": True, "walltime": 3600}, {"maxtime": 86399}, {}),
        ({"scout": True, "walltime": 3600}, {"maxtime": 86400}, {}),
        ("maxtime", 86399),
    ),
    # 10 HS06 s × 100 events / (1 core × 10 HS06 × 1.0) + 0 = 100 s
    (
        "walltime",
        ({"walltime": 3600}, {"maxtime": 99}, {}),
        ({"walltime": 3600}, {"maxtime": 100}, {}),
        ("expected_s", 100),
    ),
    (
        "connectivity",
        ({"ip_connectivity": "full#IPv6"}, {}, {}),
        ({"ip_connectivity": "http#IPv4"}, {}, {}),
        ("wnconnectivity", "full#IPv4"),
    ),
    (
        "transferring",
        ({}, {"counts": {"transferring": 2001}}, {}),
        ({}, {"counts": {"transferring": 2000}}, {}),
        ("limit", 2000),
    ),
    (
        "t1_weight",
        ({"t1_weight": -1}, {}, {}),
        ({"t1_weight": -1, "merge": True}, {}, {}),
        ("t1Weight", -1),
    ),
    (
        "no_pilot",
        ({}, {"last_pilot": NOW - timedelta(hours=3, seconds=1)}, {}),
        ({}, {"last_pilot": NOW - timedelta(hours=3)}, {}),
        ("last_pilot", None),
    ),
    (
        "work_shortage",
        (
            {},
            {"pledgedcpu": 100, "counts": {"running": 101}},
            {"params": params(WORK_SHORTAGE=True)},
        ),
        ({}, {"pledgedcpu": 100, "counts": {"running": 101}}, {}),
        ("pledgedcpu", 100),
    ),
]


@pytest.mark.parametrize(("check", "failing", "passing", "shown"), CASES, ids=[c[0] for c in CASES])
def test_each_job_check_removes_a_queue_past_its_limit_and_keeps_one_within(
    check, failing, passing, shown
):
    t_kw, q_kw, c_kw = failing
    c = broker_one(task(**t_kw), queue(**q_kw), context(**c_kw))
    assert c.removed_by == check, (c.removed_by, c.values)
    key, value = shown
    if value is not None:
        assert c.values[key] == value, c.values
    else:
        assert key in c.values
    t_kw, q_kw, c_kw = passing
    c = broker_one(task(**t_kw), queue(**q_kw), context(**c_kw))
    assert c.removed_by != check, c.values


def test_the_checks_run_in_the_seeds_order_so_the_first_failing_one_is_reported():
    q = queue(status="offline", core_count=8, maxrss=10)
    assert removed(task(), q, context()) == "status"


def test_queues_with_test_in_their_name_are_not_candidates_unless_preassigned():
    decision = production.broker_jobs(task(), [queue("ANALY_TEST_q"), queue("Q2")], context())
    assert [c.name for c in decision.candidates] == ["Q2"]
    decision = production.broker_jobs(task(site="ANALY_TEST_q"), [queue("ANALY_TEST_q")], context())
    assert decision.chosen == ["ANALY_TEST_q"]


def test_urgent_tasks_need_a_network_weight_of_nw_threshold_times_multiplier():
    # queuedW = 2 − 150/150 = 1; closeness 11 → 1 + 0/11 = 1; weight 0.5 + 0.5 = 1 < 1.7
    link = {10: LinkData(queued_files=150, closeness=11)}
    c = broker_one(task(processing_type="urgent_reco"), queue(), context(links=link))
    assert c.removed_by == "urgent_network" and c.values == {"network_weight": 1.0, "needed": 1.7}
    c = broker_one(task(processing_type="reco"), queue(), context(links=link))
    assert c.removed_by == ""
    # 1h throughput 250 MB/s → 2; queued 0 → 2: weight 2 ≥ 1.7
    c = broker_one(task(priority=1000), queue(), context(links={10: LinkData(mbps_1h=250)}))
    assert c.removed_by == ""


def test_full_chain_tasks_on_a_bare_nucleus_use_only_the_nucleus_queues():
    bare = nucleus(bare_nucleus="only")
    t = task(full_chain="only")
    assert removed(t, queue(), context(nuc=bare)) == "full_chain"
    assert removed(t, queue(nucleus=bare), context(nuc=bare)) == ""
    # A normal task on an 'allow' nucleus may use satellites too.
    allow = nucleus(bare_nucleus="allow")
    assert removed(task(), queue(), context(nuc=allow)) == ""


def test_the_basic_weight_matches_the_seeds_formula_worked_by_hand():
    # running 30; activated 10, assigned 20, starting 5, defined 5; input not local, so
    # manyAssigned = max(1, min(2, 20/10)) = 2 and w = 31 / ((10+20+5+5+10) × 2) = 0.31.
    # data: (40 + 100) / (100 × (20/100 + 1)) = 140/120; network: queuedW = 2 − 30/150 = 1.8,
    # 1h 60 MB/s → 1.6, 0.5 × 1.8 + 0.5 × 1.6 = 1.7. Total 0.31 × 7/6 × 1.7.
    q = queue(counts={"running": 30, "activated": 10, "assigned": 20, "starting": 5, "defined": 5})
    ctx = context(
        totals=(100.0, 50),
        locality={"Q1": production.Locality(size_any=40.0, size_disk=40.0, files_any=30)},
        links={10: LinkData(queued_files=30, mbps_1h=60.0, mbps_1d=5.0)},
    )
    c = broker_one(task(), q, ctx)
    assert c.factors["manyAssigned"] == 2.0
    assert c.factors["basic"] == pytest.approx(0.31)
    assert c.factors["data"] == pytest.approx(140 / 120)
    assert c.factors["network"] == pytest.approx(1.7)
    assert c.weight == pytest.approx(0.31 * 140 / 120 * 1.7)


def test_assigned_jobs_are_ignored_when_the_input_is_local():
    q = queue(counts={"running": 30, "activated": 10, "assigned": 20})
    ctx = context(
        totals=(100.0, 50),
        locality={"Q1": production.Locality(size_any=100.0, size_disk=100.0, files_any=50)},
    )
    c = broker_one(task(), q, ctx)
    # 31 / ((10 + 0 + 10) × 1) = 1.55; data (100 + 100) / (100 × 1) = 2
    assert c.factors["assigned"] == 0 and c.factors["manyAssigned"] == 1.0
    assert c.weight == pytest.approx(1.55 * 2)


@pytest.mark.parametrize(
    ("counts", "kw", "expected"),
    [
        ({"running": 5}, {}, (5, "running")),
        ({"running": 5}, {"n_batch_jobs": 40}, (20, "min(nBatchJob, 20)")),
        ({"running": 5}, {"n_batch_jobs": 12}, (12, "min(nBatchJob, 20)")),
        ({"running": 25}, {"n_batch_jobs": 40}, (25, "running")),
        ({"running": 5}, {"num_slots": 50}, (50, "numSlots")),
        ({"running": 5, "starting": 9}, {"num_slots": 0}, (9, "starting (numSlots = 0)")),
    ],
)
def test_the_running_count_is_the_largest_of_the_seeds_four_numbers(counts, kw, expected):
    q = queue(counts=counts)
    for k, v in kw.items():
        setattr(q, k, v)
    assert production.effective_running(q) == expected


def test_the_further_filters_skip_queues_with_too_many_queued_jobs():
    c = broker_one(task(), queue(counts={"running": 2, "activated": 5}), context())
    assert c.removed_by == "too_many_activated" and c.values["activated_plus_starting"] == 5
    c = broker_one(task(), queue(counts={"running": 2, "activated": 2, "defined": 3}), context())
    assert c.removed_by == "too_many_queued" and c.values["queued"] == 5
    c = broker_one(task(), queue(counts={"running": 2, "activated": 2, "defined": 2}), context())
    assert c.removed_by == ""


def test_only_the_best_ten_candidates_are_taken_the_rest_marked_low_weight():
    queues = [queue(f"Q{i:02d}", site_id=100 + i, counts={"running": i}) for i in range(12)]
    decision = production.broker_jobs(task(), queues, context())
    assert decision.chosen == [f"Q{i:02d}" for i in range(11, 1, -1)]
    low = {c.name for c in decision.candidates if c.removed_by == "low_weight"}
    assert low == {"Q00", "Q01"}


def test_when_every_queue_is_skipped_there_is_no_choice_and_a_message():
    decision = production.broker_jobs(task(), [queue(status="offline")], context())
    assert decision.chosen == [] and decision.message == "every queue was skipped"
    assert decision.removed_by == {"status": 1}


def test_a_queue_at_the_nucleus_site_gets_the_same_site_network_weight():
    nuc = nucleus(site_id=10)
    c = broker_one(task(), queue(site_id=10, nucleus=nuc), context(nuc=nuc))
    assert c.factors["network"] == 2.5


@pytest.mark.parametrize(
    ("policy", "kw", "zero"),
    [
        ("type=evgen:100%,type=simul:100%,type=any:0%", {"processing_type": "simul"}, False),
        ("type=evgen:100%,type=simul:100%,type=any:0%", {"processing_type": "reco"}, True),
        ("type=any:0%", {"processing_type": "test"}, False),
        ("gshare=MC*:0%", {"gshare": "MC Simulation"}, True),
        ("gshare=MC*:0%", {"gshare": "Express"}, False),
        ("priority>500:0", {"priority": 501}, True),
        ("priority>500:0", {"priority": 500}, False),
        ("group=AP_Higgs:0%", {"working_group": "AP_Higgs"}, True),
        ("", {}, False),
    ],
)
def test_the_zero_share_policy_is_decided_by_the_first_matching_entry(policy, kw, zero):
    assert bool(production.zero_share(policy, task(**kw))) is zero


@pytest.mark.parametrize(
    ("full_chain", "bare", "satellite_ok"),
    [
        ("only", "only", False),
        ("require", "allow", False),
        ("capable", "allow", False),  # capable, and it did land on a bare nucleus
        ("capable", "", True),  # capable on a normal nucleus: satellites too
        ("", "allow", True),  # a normal task on an 'allow' nucleus: satellites too
        ("", "", True),
    ],
)
def test_full_chain_job_brokerage_consequences(full_chain, bare, satellite_ok):
    nuc = nucleus(bare_nucleus=bare)
    t = task(full_chain=full_chain)
    assert (removed(t, queue(), context(nuc=nuc)) == "") is satellite_ok
    assert removed(t, queue(nucleus=nuc), context(nuc=nuc)) == ""


def test_queues_of_a_bare_only_nucleus_refuse_normal_tasks():
    only = nucleus("BARE", pk=7, bare_nucleus="only")
    c = broker_one(task(), queue(nucleus=only), context())
    assert c.removed_by == "full_chain" and c.values["queue_bareNucleus"] == "only"


def test_assigned_jobs_do_not_block_a_queue_whose_input_is_local():
    q = queue(counts={"running": 2, "activated": 2, "assigned": 30})
    local = {"Q1": production.Locality(size_any=10.0, size_disk=10.0, files_any=5)}
    assert removed(task(), q, context(totals=(10.0, 5), locality=local)) == ""
    assert removed(task(), q, context(totals=(10.0, 5))) == "too_many_queued"


def test_per_event_output_in_kb_is_converted_to_mb():
    # 500 kB/event × 100 events = 48.8 MB < 1.5 GB: the floor applies, 1836 MB in all.
    t = task(out_disk_count=500.0, out_disk_unit="kBPerEvent")
    assert production.expected_disk_mb(t, queue(), context()) == pytest.approx(1536 + 300)
    t = task(out_disk_count=500.0, out_disk_unit="MBPerEvent")
    assert production.expected_disk_mb(t, queue(), context()) == pytest.approx(50_000 + 300)


def test_a_queue_without_cpu_power_fails_the_walltime_check_instead_of_the_cycle():
    c = broker_one(task(walltime=3600), queue(corepower=0.0, maxtime=86400), context())
    assert c.removed_by == "walltime"


def test_a_merge_task_forgets_its_preassigned_queues_after_24_hours_of_skips():
    t = task(merge=True, site="Q1")
    qs = [queue("Q1", status="offline"), queue("Q2", site_id=11)]
    d = production.broker_jobs(t, qs, context())
    assert d.chosen == ["Q1"]  # pre-assigned: its status is not checked
    qs[0].counts["activated"] = 99  # now every pre-assigned queue is skipped
    assert production.broker_jobs(t, qs, context()).chosen == []
    d = production.broker_jobs(t, qs, context(preassignment_expired=True))
    assert d.chosen == ["Q2"]
