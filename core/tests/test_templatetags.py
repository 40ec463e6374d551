from web.templatetags.gridwms import pct


def test_pct_shows_fractions_as_percentages_and_none_as_a_dash():
    assert pct(0.0596) == "6.0 %"
    assert pct(1, 0) == "100 %"
    assert pct(None) == "—"


def test_a_measured_number_is_shown_with_four_significant_digits():
    from web.templatetags.gridwms import number

    assert number(33.18000272488074) == "33.18"
    assert number(1.88333) == "1.883"
    assert number(1234.5678) == "1235"
    assert number(0.00012345) == "0.0001234"
    assert number(20.0) == "20"
    assert number(7) == "7" and number(0.0) == "0" and number(None) == "—"


def test_a_stored_structure_reads_as_key_value_pairs_not_a_python_dict():
    from web.templatetags.gridwms import readable

    html = readable(
        {"network": 1.8833333, "network_detail": {"queued_w": 1.86666, "source": "<1d>"}}
    )
    assert "{" not in html and "'" not in html
    assert "<dt>network</dt><dd>1.883</dd>" in html
    assert "<dt>queued_w</dt><dd>1.867</dd>" in html  # the nested dict, its own pairs
    assert "&lt;1d&gt;" in html  # text escaped
    assert readable(["a", "b"]) == "a, b" and readable(True) == "yes"


def test_a_time_says_how_long_ago_and_is_marked_simulated_only_on_the_simulated_clock(db, settings):
    from datetime import timedelta

    from core import clock
    from core.models import SimulationClock
    from web.templatetags.gridwms import ago, when

    assert ago(3 * 60 + 10) == "3 min ago" and ago(-7200) == "in 2 h" and ago(2) == "just now"
    three_min = clock.now() - timedelta(minutes=3, seconds=1)
    html = when(three_min)
    assert "3 min ago" in html and "sim" not in html
    settings.SIMULATED_CLOCK = True
    now = clock.now()
    SimulationClock.objects.create(pk=1, running=False, speed=60, anchor_real=now, anchor_sim=now)
    clock.invalidate()
    try:
        html = when(three_min)
        assert 'class="sim-label"' in html and "60× real time" not in html  # paused
        assert "paused" in html and "3 min ago" in html
        # Wall-clock timestamps (gdpconfig history) are never marked simulated.
        assert "sim" not in when(three_min, "real")
    finally:
        clock.invalidate()
