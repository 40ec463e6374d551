from config.templatetags.gridwms import pct


def test_pct_shows_fractions_as_percentages_and_none_as_a_dash():
    assert pct(0.0596) == "6.0 %"
    assert pct(1, 0) == "100 %"
    assert pct(None) == "—"
