"""Production task brokerage (docs/developer-guide.md, PanDA brokerage)."""

import random

import pytest

from brokerage import production
from brokerage.tests.factories import nucleus, params, storage, task

TB = 1024.0


class FixedRNG:
    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value


def broker(t, nuclei, locality=None, totals=(0.0, 0), rng=None, parent=None, **p):
    return production.broker_task(
        t, nuclei, locality or {}, totals, params("task", **p), rng or random.Random(1), parent
    )


def by_name(decision):
    return {c.name: c for c in decision.candidates}


def big(name="N", **kw):
    """A nucleus with 200 TB free of 400 TB: passes the 100 TB threshold."""
    return nucleus(
        name, storages=[storage(f"{name}_D", space_free=200 * TB, space_total=400 * TB)], **kw
    )


def test_only_active_nuclei_are_candidates():
    d = broker(task(), [big("A"), big("B", state="INACTIVE")])
    assert by_name(d)["B"].removed_by == "status" and d.chosen == ["A"]


def test_a_transfer_backlog_skips_the_nucleus_unless_t1weight_is_negative():
    assert (
        by_name(broker(task(), [big(transfer_backlog=True)]))["N"].removed_by == "transfer_backlog"
    )
    assert broker(task(t1_weight=-1), [big(transfer_backlog=True)]).chosen == ["N"]


def test_a_nucleus_needs_associated_storages():
    assert by_name(broker(task(), [nucleus("N", storages=[])]))["N"].removed_by == "no_storage"


def test_space_free_plus_expired_minus_expected_output_must_exceed_the_threshold():
    # 90 TB free + 10 TB expired − 0.25 GB × RW 400 core-days (100 GB) = 102300 GB < 102400 GB
    n = nucleus(
        "N",
        rw=400.0,
        storages=[storage(space_free=90 * TB, space_expired=10 * TB, space_total=400 * TB)],
    )
    c = by_name(broker(task(), [n]))["N"]
    assert c.removed_by == "space"
    assert c.values["expected_output_gb"] == 100.0 and c.values["threshold_gb"] == 100 * TB
    n.rw = 0.0  # 102400 GB is not > 102400 GB either
    assert by_name(broker(task(), [n]))["N"].removed_by == "space"
    n.storages_list[0].space_expired = 10 * TB + 1
    assert broker(task(), [n]).chosen == ["N"]


def test_the_disk_threshold_of_the_tasks_gshare_overrides_the_general_one():
    n = big()  # 200 TB free
    d = broker(task(gshare="Express"), [n], DISK_THRESHOLD_PER_GSHARE={"Express": 250.0})
    assert by_name(d)["N"].values["threshold_gb"] == 250 * TB
    assert broker(task(gshare="MC"), [n], DISK_THRESHOLD_PER_GSHARE={"Express": 250.0}).chosen == [
        "N"
    ]


def test_nucleus_storages_must_read_and_write_over_wan():
    n = big()
    n.storages_list[0].write_wan = False
    c = by_name(broker(task(), [n]))["N"]
    assert c.removed_by == "wan" and c.values == {"storages_without_read_and_write_wan": ["N_D"]}


def _loc(size, files, disk=None):
    return production.Locality(
        size_any=size, size_disk=size if disk is None else disk, files_any=files
    )


def test_data_locality_by_size_and_by_files():
    nuclei = [big("A"), big("B"), big("C")]
    loc = {"A": _loc(100.0, 500), "B": _loc(10.0, 500), "C": _loc(100.0, 100)}
    d = broker(task(), nuclei, loc, totals=(100.0, 1000))
    c = by_name(d)
    assert c["A"].removed_by == ""
    # 10 / 100 = 0.1 is not larger than INPUT_SIZE_FRACTION 0.1
    assert c["B"].removed_by == "data_locality" and c["B"].values["fraction"] == 0.1
    # 100 / 1000 files = 0.1: not larger than INPUT_NUM_FRACTION
    assert c["C"].removed_by == "data_locality" and c["C"].values["total_files"] == 1000
    assert d.chosen == ["A"]


def test_small_inputs_skip_the_locality_thresholds():
    # 1 GB is not above INPUT_SIZE_THRESHOLD (1 GB); 100 files not above INPUT_NUM_THRESHOLD
    assert broker(task(), [big()], {}, totals=(1.0, 100)).chosen == ["N"]


def test_input_prestaging_accepts_nuclei_with_incomplete_data_but_not_with_none():
    t = task(input_pre_staging=True, io_intensity=300.0)  # no locality waiver for it
    some = {"N": _loc(50.0, 50)}  # 1 % of the bytes and files
    assert broker(t, [big()], some, totals=(5000.0, 5000)).chosen == ["N"]
    d = broker(t, [big()], {}, totals=(5000.0, 5000))
    assert d.chosen == [] and by_name(d)["N"].removed_by == "data_locality"


def test_locality_is_waived_when_no_nucleus_passes_for_low_io_small_input_tasks():
    # ioIntensity 200 ≤ 200 and 10000 GB ≤ 10000 GB: the check is disabled.
    assert broker(task(io_intensity=200.0), [big()], {}, totals=(10000.0, 10)).chosen == ["N"]
    # Larger input: not waived, no nucleus.
    d = broker(task(io_intensity=200.0), [big()], {}, totals=(10001.0, 10))
    assert d.chosen == [] and by_name(d)["N"].removed_by == "data_locality"
    # ... unless the task priority reaches MAX_TASK_PRIO_WITH_LOCAL_DATA (800).
    assert broker(
        task(io_intensity=900.0, priority=800), [big()], {}, totals=(10001.0, 10)
    ).chosen == ["N"]
    d = broker(task(io_intensity=900.0, priority=799), [big()], {}, totals=(10001.0, 10))
    assert d.chosen == []


def test_the_weight_without_io_intensity_worked_by_hand():
    # tapeWeight 1 × (free 200 TB + expired 0) × min(1000 TB, 200 TB) / (max(50, 20) × 400 TB)
    n = big(rw=20.0)
    d = broker(task(), [n])
    expected = (200 * TB) * (200 * TB) / (50 * 400 * TB)
    assert by_name(d)["N"].weight == pytest.approx(expected)
    n.rw = 100.0  # RW above the offset divides instead
    assert by_name(broker(task(), [n]))["N"].weight == pytest.approx(expected / 2)


def test_the_weight_of_io_intensive_tasks_uses_the_local_input_fraction():
    # ioIntensity 300 > 200: × localInputSize 60 / totalInputSize 100
    n = big()
    d = broker(task(io_intensity=300.0), [n], {"N": _loc(60.0, 1000)}, totals=(100.0, 1000))
    base = (200 * TB) * (200 * TB) / (50 * 400 * TB)
    assert by_name(d)["N"].weight == pytest.approx(base * 0.6)


def test_input_only_on_tape_weighs_a_thousand_times_less():
    n = big()
    d = broker(task(), [n], {"N": _loc(60.0, 1000, disk=0.0)}, totals=(100.0, 1000))
    base = (200 * TB) * (200 * TB) / (50 * 400 * TB)
    assert by_name(d)["N"].factors["tapeWeight"] == 0.001
    assert by_name(d)["N"].weight == pytest.approx(base * 0.001)


def test_free_space_counts_only_up_to_free_disk_cutoff():
    n = big()
    d = broker(task(), [n], FREE_DISK_CUTOFF=100.0)
    assert by_name(d)["N"].weight == pytest.approx((200 * TB) * (100 * TB) / (50 * 400 * TB))


def test_the_choice_is_a_weighted_draw_from_the_injected_rng():
    a, b = big("A"), big("B")
    b.storages_list[0].space_free = 300 * TB  # B weighs (300/200)² = 2.25 times A
    wa = (200 * TB) ** 2 / (50 * 400 * TB)
    share_a = wa / (wa * (1 + 2.25))
    assert broker(task(), [a, b], rng=FixedRNG(share_a - 1e-9)).chosen == ["A"]
    assert broker(task(), [a, b], rng=FixedRNG(share_a + 1e-9)).chosen == ["B"]
    picks = [broker(task(), [a, b], rng=random.Random(s)).chosen[0] for s in range(400)]
    assert 0.2 < picks.count("A") / 400 < 0.4  # expected 1/3.25 ≈ 0.31


def test_no_nucleus_left_means_no_choice():
    d = broker(task(), [big(state="INACTIVE")])
    assert d.chosen == [] and d.message


@pytest.mark.parametrize(
    ("full_chain", "bare", "ok"),
    [
        ("", "", True),
        ("", "allow", True),
        ("", "only", False),
        ("only", "only", True),
        ("only", "allow", False),
        ("only", "", False),
        ("require", "only", True),
        ("require", "allow", True),
        ("require", "", False),
        ("capable", "", True),
        # capable without a parent on a bare nucleus is a normal task: not at an 'only' nucleus
        ("capable", "only", False),
    ],
)
def test_full_chain_and_bare_nucleus_combinations(full_chain, bare, ok):
    d = broker(task(full_chain=full_chain), [big(bare_nucleus=bare)])
    assert (d.chosen == ["N"]) is ok, by_name(d)["N"].values


def test_a_capable_task_follows_a_parent_that_ran_on_a_bare_nucleus():
    parent_nucleus = big("BARE", bare_nucleus="allow")
    d = broker(task(full_chain="capable"), [big("OTHER"), parent_nucleus], parent=parent_nucleus)
    assert d.chosen == ["BARE"] and by_name(d)["OTHER"].removed_by == "full_chain"
    # A parent on a normal nucleus: capable is ignored.
    normal = big("NORMAL")
    d = broker(task(full_chain="capable"), [big("OTHER"), normal], parent=normal, rng=FixedRNG(0.0))
    assert d.chosen == ["OTHER"]
