"""The network weight of a satellite → nucleus link (brokerage/network.py).

PanDA's network weight (docs/developer-guide.md, PanDA brokerage):
weight = importance × queuedW + (1 − importance) × throughputW,
queuedW = 2 − queued / NQUEUED_SAT_CAP, throughputW from the freshest throughput (1 h, else 1 d,
else 1 w), else from the closeness 1 + (11 − closeness) / 11 (missing closeness: 7.7); same
site 2.5; no link data: None.
PanDA's defaults: NW_QUEUE_IMPORTANCE 0.5, NQUEUED_SAT_CAP 150.
"""

import pytest

from brokerage.network import LinkData, closeness_weight, network_weight, throughput_weight

CAP = 150
HALF = 0.5


# --- throughput weight -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mbps", "weight"),
    [
        (1000, 2.0),
        (200.01, 2.0),
        (200, 1.9),  # thresholds are strictly exceeded: exactly 200 is not > 200
        (100.5, 1.9),
        (100, 1.8),
        (75.1, 1.8),
        (75, 1.6),
        (50.1, 1.6),
        (50, 1.5),
        (20.1, 1.5),
        (20, 1.3),
        (10.1, 1.3),
        (10, 1.2),
        (2.1, 1.2),
        (2, 1.1),
        (1.01, 1.1),
        (1, 1.0),
        (0.5, 1.0),
        (0, 1.0),
    ],
)
def test_throughput_weight_takes_the_first_threshold_strictly_exceeded(mbps, weight):
    assert throughput_weight(mbps) == weight


def test_throughput_weight_never_decreases_with_throughput():
    weights = [throughput_weight(m / 10) for m in range(0, 3000)]
    assert weights == sorted(weights)
    assert weights[0] == 1.0 and weights[-1] == 2.0


# --- closeness weight --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("closeness", "weight"),
    [
        (0, 2.0),  # best: 1 + 11/11
        (11, 1.0),  # worst: 1 + 0/11
        (1, 1 + 10 / 11),  # 1.9090…
        (3, 1 + 8 / 11),  # 1.7272…
        (5, 1 + 6 / 11),  # 1.5454…
    ],
)
def test_closeness_weight_normalises_0_best_to_11_worst(closeness, weight):
    assert closeness_weight(closeness) == pytest.approx(weight)


def test_missing_closeness_is_treated_as_7_7():
    # 1 + (11 − 7.7) / 11 = 1 + 3.3 / 11 = 1.3
    assert closeness_weight(None) == pytest.approx(1.3)
    assert closeness_weight(None) == pytest.approx(closeness_weight(7.7))


# --- network weight ----------------------------------------------------------------------------


def test_queue_at_the_nucleus_gets_2_5_for_both_factors():
    weight, factors = network_weight(LinkData(queued_files=149, mbps_1h=0.1), True, CAP, HALF)
    assert weight == 2.5
    assert factors["queued_w"] == 2.5 and factors["throughput_w"] == 2.5


@pytest.mark.parametrize("importance", [0.0, 0.25, 0.5, 1.0])
def test_queue_at_the_nucleus_gets_2_5_whatever_the_importance_and_without_link_data(importance):
    weight, _ = network_weight(None, True, CAP, importance)
    assert weight == pytest.approx(2.5)


def test_link_without_any_data_gives_no_weight():
    assert network_weight(None, False, CAP, HALF) is None


def test_weight_blends_queued_and_hourly_throughput_with_the_importance():
    # queuedW = 2 − 30/150 = 1.8; 150 MB/s > 100 → throughputW 1.9
    # weight = 0.5 × 1.8 + 0.5 × 1.9 = 1.85
    weight, factors = network_weight(LinkData(queued_files=30, mbps_1h=150), False, CAP, HALF)
    assert weight == pytest.approx(1.85)
    assert factors["queued_files"] == 30
    assert factors["queued_w"] == pytest.approx(1.8)
    assert factors["throughput_w"] == pytest.approx(1.9)
    assert factors["source"].startswith("throughput 1h")


def test_importance_weighs_the_queue_against_the_throughput():
    # queuedW = 2 − 150/150 = 1; 250 MB/s > 200 → throughputW 2
    # weight = 0.25 × 1 + 0.75 × 2 = 1.75
    link = LinkData(queued_files=150, mbps_1h=250)
    assert network_weight(link, False, CAP, 0.25)[0] == pytest.approx(1.75)
    # importance 1: only the queue counts → 1; importance 0: only the throughput → 2
    assert network_weight(link, False, CAP, 1.0)[0] == pytest.approx(1.0)
    assert network_weight(link, False, CAP, 0.0)[0] == pytest.approx(2.0)


def test_missing_queued_files_count_as_none_queued():
    # queuedW = 2 − 0/150 = 2; 60 MB/s > 50 → 1.6; weight = 0.5 × 2 + 0.5 × 1.6 = 1.8
    weight, factors = network_weight(LinkData(mbps_1h=60), False, CAP, HALF)
    assert weight == pytest.approx(1.8)
    assert factors["queued_files"] == 0


def test_queued_weight_scales_with_the_satellite_cap():
    # cap 300: queuedW = 2 − 150/300 = 1.5; 5 MB/s > 2 → 1.2; weight = 0.5 × 1.5 + 0.5 × 1.2 = 1.35
    weight, _ = network_weight(LinkData(queued_files=150, mbps_1h=5), False, 300, HALF)
    assert weight == pytest.approx(1.35)


def test_queued_weight_reaches_zero_at_twice_the_cap():
    # queuedW = 2 − 300/150 = 0; 15 MB/s > 10 → 1.3; weight = 0.5 × 0 + 0.5 × 1.3 = 0.65
    weight, factors = network_weight(LinkData(queued_files=300, mbps_1h=15), False, CAP, HALF)
    assert factors["queued_w"] == 0
    assert weight == pytest.approx(0.65)


def test_hourly_throughput_is_preferred_to_daily_and_weekly():
    # 1h 5 MB/s → 1.2 (not 1d's 300 → 2, not 1w's 80 → 1.8)
    # weight = 0.5 × 2 + 0.5 × 1.2 = 1.6
    link = LinkData(mbps_1h=5, mbps_1d=300, mbps_1w=80, closeness=0)
    weight, factors = network_weight(link, False, CAP, HALF)
    assert factors["throughput_w"] == pytest.approx(1.2)
    assert weight == pytest.approx(1.6)
    assert factors["source"].startswith("throughput 1h")


def test_daily_throughput_is_used_without_an_hourly_value():
    # 1d 300 MB/s > 200 → 2; weight = 0.5 × 2 + 0.5 × 2 = 2.0
    link = LinkData(mbps_1d=300, mbps_1w=80, closeness=11)
    weight, factors = network_weight(link, False, CAP, HALF)
    assert factors["throughput_w"] == pytest.approx(2.0)
    assert weight == pytest.approx(2.0)
    assert factors["source"].startswith("throughput 1d")


def test_weekly_throughput_is_used_without_hourly_or_daily_values():
    # 1w 80 MB/s > 75 → 1.8; queuedW = 2 − 75/150 = 1.5; weight = 0.5 × 1.5 + 0.5 × 1.8 = 1.65
    link = LinkData(queued_files=75, mbps_1w=80, closeness=0)
    weight, factors = network_weight(link, False, CAP, HALF)
    assert factors["throughput_w"] == pytest.approx(1.8)
    assert weight == pytest.approx(1.65)
    assert factors["source"].startswith("throughput 1w")


def test_daily_value_is_used_even_when_the_weekly_one_is_missing():
    # Unlike PanDA's code (a missing 1w value leaves mbps None), the seed prefers any fresh value.
    # 1d 30 MB/s > 20 → 1.5; weight = 0.5 × 2 + 0.5 × 1.5 = 1.75
    weight, factors = network_weight(LinkData(mbps_1d=30, closeness=11), False, CAP, HALF)
    assert factors["throughput_w"] == pytest.approx(1.5)
    assert weight == pytest.approx(1.75)


def test_a_measured_zero_throughput_is_data_and_does_not_fall_back():
    # 1h 0 MB/s → 1.0 (no threshold exceeded), not the 1d 300 → 2
    # weight = 0.5 × 2 + 0.5 × 1.0 = 1.5
    weight, factors = network_weight(LinkData(mbps_1h=0, mbps_1d=300), False, CAP, HALF)
    assert factors["throughput_w"] == pytest.approx(1.0)
    assert weight == pytest.approx(1.5)


def test_exactly_200_mb_s_weighs_1_9_in_the_network_weight():
    # 200 is not > 200 → 1.9; weight = 0.5 × 2 + 0.5 × 1.9 = 1.95
    weight, _ = network_weight(LinkData(mbps_1h=200), False, CAP, HALF)
    assert weight == pytest.approx(1.95)


def test_closeness_is_used_without_any_throughput():
    # closeness 3 → 1 + 8/11 = 1.72727…; queuedW = 2 − 15/150 = 1.9
    # weight = 0.5 × 1.9 + 0.5 × 1.72727… = 0.95 + 0.863636… = 1.813636…
    weight, factors = network_weight(LinkData(queued_files=15, closeness=3), False, CAP, HALF)
    assert weight == pytest.approx(0.5 * 1.9 + 0.5 * (1 + 8 / 11))
    assert weight == pytest.approx(1.8136364)
    assert factors["throughput_w"] == pytest.approx(1.7273)
    assert factors["source"] == "closeness 3"


def test_best_closeness_weighs_like_the_fastest_link_and_worst_like_none():
    # closeness 0 → 2.0; weight = 0.5 × 2 + 0.5 × 2 = 2.0
    assert network_weight(LinkData(closeness=0), False, CAP, HALF)[0] == pytest.approx(2.0)
    # closeness 11 → 1.0; weight = 0.5 × 2 + 0.5 × 1 = 1.5
    assert network_weight(LinkData(closeness=11), False, CAP, HALF)[0] == pytest.approx(1.5)


def test_missing_closeness_without_throughput_falls_back_to_7_7():
    # throughputW = 1 + (11 − 7.7)/11 = 1.3; queuedW = 2 − 60/150 = 1.6
    # weight = 0.5 × 1.6 + 0.5 × 1.3 = 1.45
    weight, factors = network_weight(LinkData(queued_files=60), False, CAP, HALF)
    assert weight == pytest.approx(1.45)
    assert factors["throughput_w"] == pytest.approx(1.3)
    assert "7.7" in factors["source"]


def test_link_with_only_a_queue_count_still_gets_a_weight():
    # An empty LinkData is link data (the row exists): closeness 7.7 → 1.3, queuedW 2
    # weight = 0.5 × 2 + 0.5 × 1.3 = 1.65
    assert network_weight(LinkData(), False, CAP, HALF)[0] == pytest.approx(1.65)


def test_link_data_defaults_to_nothing_known():
    link = LinkData()
    assert (link.queued_files, link.mbps_1h, link.mbps_1d, link.mbps_1w, link.closeness) == (
        None,
        None,
        None,
        None,
        None,
    )


def test_link_data_is_immutable():
    link = LinkData(queued_files=1)
    with pytest.raises(AttributeError):
        link.queued_files = 2  # type: ignore[misc]


def test_fuller_links_weigh_less_at_equal_throughput():
    weights = [
        network_weight(LinkData(queued_files=q, mbps_1h=50.5), False, CAP, HALF)[0]
        for q in (0, 30, 75, 149)
    ]
    # queuedW 2, 1.8, 1.5, 1.00667 with throughputW 1.6: 1.8, 1.7, 1.55, 1.30333
    assert weights == pytest.approx([1.8, 1.7, 1.55, 0.5 * (2 - 149 / 150) + 0.8])
