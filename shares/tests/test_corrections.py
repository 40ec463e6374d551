"""The WMSHistory corrector, numbers derived by hand from the seed's formula."""

import pytest

from shares.corrections import (
    SEED_EXAMPLE,
    Instance,
    Slice,
    corrections,
    parse_instances,
    slice_corrections,
)

SHARES = {"user": 10000, "mc": 300, "data": 40000}  # sum 50300
WEEK = {"user": 600, "mc": 0, "data": 400}
HOUR = {"user": 100, "mc": 10, "data": 890}


def seed_groups_instance(max_global=3.0):
    return Instance(
        "GroupsInstance",
        (Slice("WeekSlice", 604800, 80, 2), Slice("HourSlice", 3600, 20, 5)),
        max_global,
    )


def test_the_seeds_two_slice_example_by_hand():
    final, (week, hour) = corrections(seed_groups_instance(), SHARES, [WEEK, HOUR])
    s_user, s_mc, s_data = 10000 / 50300, 300 / 50300, 40000 / 50300
    # Week (MaxCorrection 2): user 0.1988/0.6 = 0.331 -> 0.5; mc did not run -> 2; data 1.988.
    assert week == pytest.approx({"user": 0.5, "mc": 2.0, "data": s_data / 0.4})
    # Hour (MaxCorrection 5): user 1.988; mc 0.596; data 0.8935.
    assert hour == pytest.approx({"user": s_user / 0.1, "mc": s_mc / 0.01, "data": s_data / 0.89})
    assert final["user"] == pytest.approx(0.8 * 0.5 + 0.2 * s_user / 0.1)
    assert final["mc"] == pytest.approx(0.8 * 2 + 0.2 * s_mc / 0.01)
    assert final["data"] == pytest.approx(0.8 * s_data / 0.4 + 0.2 * s_data / 0.89)


def test_an_entity_running_three_times_its_share_gets_a_third():
    out = slice_corrections({"a": 25, "b": 75}, {"a": 75, "b": 25}, 10)
    assert out["a"] == pytest.approx(1 / 3) and out["b"] == pytest.approx(3)


def test_each_slice_correction_is_clamped_to_its_max_correction_both_ways():
    out = slice_corrections({"a": 1, "b": 1}, {"a": 1, "b": 99}, 5)
    assert out["a"] == 5  # 0.5 / 0.01 = 50, clamped
    out = slice_corrections({"a": 1, "b": 99}, {"a": 99, "b": 1}, 5)
    assert out["a"] == pytest.approx(1 / 5)  # 0.01 / 0.99, clamped


def test_the_final_correction_is_clamped_to_max_global_correction_factor():
    final, _ = corrections(seed_groups_instance(max_global=1.5), SHARES, [WEEK, HOUR])
    assert final["mc"] == 1.5 and final["data"] == 1.5
    assert final["user"] == pytest.approx(0.8 * 0.5 + 0.2 * (10000 / 50300) / 0.1)
    final, _ = corrections(
        seed_groups_instance(max_global=1.1),
        {"a": 1, "b": 99},
        [
            {"a": 99, "b": 1},
            {"a": 99, "b": 1},
        ],
    )
    assert final["a"] == pytest.approx(1 / 1.1)


def test_a_slice_in_which_nobody_ran_is_neutral():
    final, (_, hour) = corrections(seed_groups_instance(), SHARES, [WEEK, {}])
    assert hour == {"user": 1.0, "mc": 1.0, "data": 1.0}
    assert final["user"] == pytest.approx(0.8 * 0.5 + 0.2 * 1.0)


def test_an_absent_entity_gets_max_correction_in_each_slice():
    final, (week, hour) = corrections(seed_groups_instance(), SHARES, [WEEK, {"user": 5}])
    assert week["mc"] == 2 and hour["mc"] == 5 and hour["data"] == 5
    assert final["mc"] == pytest.approx(0.8 * 2 + 0.2 * 5)


def test_weights_are_normalised():
    inst = Instance("i", (Slice("a", 10, 8, 2), Slice("b", 20, 2, 5)), 3)
    f1, _ = corrections(inst, SHARES, [WEEK, HOUR])
    f2, _ = corrections(seed_groups_instance(), SHARES, [WEEK, HOUR])
    assert f1 == pytest.approx(f2)


def test_the_seed_example_configuration_parses():
    groups, users = parse_instances(SEED_EXAMPLE)
    assert groups.group is None and users.group == "lhcb_user"
    assert [(s.name, s.time_span, s.weight, s.max_correction) for s in groups.slices] == [
        ("WeekSlice", 604800, 80.0, 2.0),
        ("HourSlice", 3600, 20.0, 5.0),
    ]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {
                "I": {
                    "MaxGlobalCorrectionFactor": 0.5,
                    "S": {"TimeSpan": 1, "Weight": 1, "MaxCorrection": 2},
                }
            },
            "I.MaxGlobalCorrectionFactor",
        ),
        ({"I": {"MaxGlobalCorrectionFactor": 3}}, "at least one time slice"),
        (
            {
                "I": {
                    "MaxGlobalCorrectionFactor": 3,
                    "S": {"TimeSpan": -1, "Weight": 1, "MaxCorrection": 2},
                }
            },
            "I.S.TimeSpan",
        ),
        (
            {
                "I": {
                    "MaxGlobalCorrectionFactor": 3,
                    "S": {"TimeSpan": 60, "Weight": "x", "MaxCorrection": 2},
                }
            },
            "I.S.Weight",
        ),
        (
            {
                "I": {
                    "MaxGlobalCorrectionFactor": 3,
                    "S": {"TimeSpan": 60, "Weight": 1, "MaxCorrection": 0.5},
                }
            },
            "I.S.MaxCorrection",
        ),
        (
            {
                "I": {
                    "MaxGlobalCorrectionFactor": 3,
                    "S": {"TimeSpan": 60, "Weight": 1, "MaxCorrection": 2, "Colour": 1},
                }
            },
            "unknown options",
        ),
        (
            {
                "I": {
                    "MaxGlobalCorrectionFactor": 3,
                    "S": {"TimeSpan": 60, "Weight": 0, "MaxCorrection": 2},
                }
            },
            "weights",
        ),
        ({"A": SEED_EXAMPLE["GroupsInstance"], "B": SEED_EXAMPLE["GroupsInstance"]}, "again"),
        ([], "object"),
    ],
)
def test_a_bad_corrector_configuration_names_the_offending_option(config, message):
    with pytest.raises(ValueError, match=message):
        parse_instances(config)


@pytest.mark.parametrize(
    ("span", "message"),
    [(10**11, "between"), (0.5, "whole number"), (0, "between"), (float("inf"), "whole number")],
)
def test_a_time_span_must_be_whole_seconds_up_to_a_year(span, message):
    config = {
        "I": {
            "MaxGlobalCorrectionFactor": 3,
            "S": {"TimeSpan": span, "Weight": 1, "MaxCorrection": 2},
        }
    }
    with pytest.raises(ValueError, match=message):
        parse_instances(config)


def test_non_finite_numbers_are_refused():
    config = {
        "I": {
            "MaxGlobalCorrectionFactor": float("nan"),
            "S": {"TimeSpan": 60, "Weight": 1, "MaxCorrection": 2},
        }
    }
    with pytest.raises(ValueError, match="finite"):
        parse_instances(config)
