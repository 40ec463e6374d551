import pytest

from matcher.taskqueues import canonical_values, cpu_segment, definition, definition_key

SEGMENTS = [500, 5000, 50000, 300000]


@pytest.mark.parametrize(
    ("cpu_time", "segment"),
    [
        (1, 500),
        (499, 500),
        (500, 500),
        (501, 5000),
        (4999, 5000),
        (5000, 5000),
        (5001, 50000),
        (50000, 50000),
        (50001, 300000),
        (299999, 300000),
        (300000, 300000),
        (300001, 300000),
        (10_000_000, 300000),
    ],
)
def test_cpu_time_goes_to_the_first_segment_at_least_as_large_or_the_last(cpu_time, segment):
    assert cpu_segment(cpu_time, SEGMENTS) == segment


def test_cpu_segments_follow_a_changed_segment_list():
    assert cpu_segment(700, [360, 1800]) == 1800
    assert cpu_segment(360, [360, 1800]) == 360
    assert cpu_segment(5000, [360, 1800]) == 1800


def test_multi_valued_requirements_are_canonical_sets():
    assert canonical_values(["b", " a", "b", "", "a "]) == ["a", "b"]


def _defn(**req):
    base = {"sites": ["A", "B"], "tags": ["x"], "platforms": []}
    base.update(req)
    return definition(1, 2, "Prod", 1000, base, SEGMENTS)


def test_the_same_definition_in_any_order_of_list_values_has_the_same_key():
    assert definition_key(_defn()) == definition_key(_defn(sites=["B", "A", "A"]))


def test_cpu_times_in_one_segment_share_a_key_and_across_segments_do_not():
    k = definition_key
    seg = SEGMENTS
    assert k(definition(1, 2, "P", 501, {}, seg)) == k(definition(1, 2, "P", 5000, {}, seg))
    assert k(definition(1, 2, "P", 500, {}, seg)) != k(definition(1, 2, "P", 501, {}, seg))


@pytest.mark.parametrize(
    "change",
    [
        {"sites": ["A"]},
        {"tags": []},
        {"platforms": ["x86_64-el9"]},
        {"banned_sites": ["A"]},
        {"grid_ces": ["ce1"]},
        {"submit_pools": ["gridPool"]},
        {"pilot_types": ["private"]},
        {"grid_middlewares": ["ARC"]},
    ],
)
def test_any_difference_in_a_multi_valued_field_gives_another_key(change):
    assert definition_key(_defn()) != definition_key(_defn(**change))


def test_a_value_moved_between_fields_gives_another_key():
    a = definition(1, 2, "P", 10, {"sites": ["X"]}, SEGMENTS)
    b = definition(1, 2, "P", 10, {"banned_sites": ["X"]}, SEGMENTS)
    assert definition_key(a) != definition_key(b)


def test_owner_group_and_setup_are_part_of_the_key():
    base = definition_key(definition(1, 2, "P", 10, {}, SEGMENTS))
    assert base != definition_key(definition(3, 2, "P", 10, {}, SEGMENTS))
    assert base != definition_key(definition(1, 4, "P", 10, {}, SEGMENTS))
    assert base != definition_key(definition(1, 2, "Q", 10, {}, SEGMENTS))
