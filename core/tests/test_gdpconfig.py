import pytest

from core import gdpconfig
from core.gdpconfig import ConfigError
from core.models import ParameterValue


def test_an_unset_parameter_reads_its_default(db):
    assert gdpconfig.get("CPUSegments") == [500, 5000, 50000, 300000]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("360, 1800, 3600", [360, 1800, 3600]),
        ("[100, 200]", [100, 200]),
        ([10, 20.0], [10, 20]),
    ],
)
def test_cpu_segments_accept_increasing_positive_integers_as_text_or_json(raw, expected):
    assert gdpconfig.param("CPUSegments").coerce(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("500, 500, 600", "strictly increasing"),
        ("5000, 500", "strictly increasing"),
        ("0, 500", "at least 1"),
        ("-5, 500", "at least 1"),
        ("500, abc", "integer"),
        ("", "at least one"),
        ([1.5, 3], "integer"),
        (True, "list"),
        ("[1, 2", "not a valid list"),
    ],
)
def test_bad_cpu_segments_are_refused_with_a_message_naming_the_parameter(raw, message):
    with pytest.raises(ConfigError) as err:
        gdpconfig.param("CPUSegments").coerce(raw)
    assert err.value.field == "CPUSegments"
    assert message in err.value.message


@pytest.mark.parametrize("raw", ["three", True, 2.5, -1, None])
def test_an_integer_parameter_refuses_a_value_of_another_type_or_out_of_range(raw):
    with pytest.raises(ConfigError) as err:
        gdpconfig.param("MaxRescheduling").coerce(raw)
    assert err.value.field == "MaxRescheduling"


def test_each_change_is_a_new_version_with_who_and_why(users):
    admin = users["admin"]
    gdpconfig.set_value("MaxRescheduling", 5, admin, "more retries")
    gdpconfig.set_value("MaxRescheduling", "7", admin, "even more")
    assert gdpconfig.get("MaxRescheduling") == 7
    versions = list(ParameterValue.objects.filter(name="MaxRescheduling").order_by("version"))
    assert [(v.version, v.value, v.previous) for v in versions] == [(1, 5, 3), (2, 7, 5)]
    assert versions[1].changed_by == admin and versions[1].comment == "even more"


def test_a_refused_value_stores_nothing_and_keeps_the_active_value(db):
    gdpconfig.set_value("MaxRescheduling", 4)
    with pytest.raises(ConfigError):
        gdpconfig.set_value("MaxRescheduling", "lots")
    assert gdpconfig.get("MaxRescheduling") == 4
    assert ParameterValue.objects.filter(name="MaxRescheduling").count() == 1


def test_rollback_makes_an_old_version_active_as_a_new_version(db):
    gdpconfig.set_value("CPUSegments", [100, 200])
    gdpconfig.set_value("CPUSegments", [300, 400])
    gdpconfig.rollback("CPUSegments", 1)
    assert gdpconfig.get("CPUSegments") == [100, 200]
    last = ParameterValue.objects.filter(name="CPUSegments").order_by("-version").first()
    assert last.version == 3 and last.comment == "rollback to version 1"


def test_a_rollback_to_a_missing_version_is_refused(db):
    with pytest.raises(ConfigError):
        gdpconfig.rollback("CPUSegments", 9)


def test_an_unknown_parameter_is_an_error_naming_it(db):
    with pytest.raises(ConfigError) as err:
        gdpconfig.get("NoSuchThing")
    assert err.value.field == "NoSuchThing"


def test_a_value_written_by_another_process_is_seen_without_restart(db):
    assert gdpconfig.get("MaxRescheduling") == 3
    # Another process writes the row directly; this process only sees the table change.
    ParameterValue.objects.create(name="MaxRescheduling", version=1, value=9)
    assert gdpconfig.get("MaxRescheduling") == 9


@pytest.mark.production_lifetimes
def test_reads_are_served_from_memory_between_refreshes(db, django_assert_num_queries, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(gdpconfig.time, "monotonic", lambda: now[0])
    gdpconfig.get("MaxRescheduling")
    with django_assert_num_queries(0):
        for _ in range(100):
            gdpconfig.get("CPUSegments")
        now[0] += 1.9
        gdpconfig.get("CPUSegments")


@pytest.mark.production_lifetimes
def test_a_value_written_elsewhere_is_seen_within_the_two_second_refresh_bound(db, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(gdpconfig.time, "monotonic", lambda: now[0])
    assert gdpconfig.get("MaxRescheduling") == 3
    # Another process writes the row directly: this one trusts its cache for 2 s, no longer.
    ParameterValue.objects.create(name="MaxRescheduling", version=1, value=9)
    now[0] += 1.9
    assert gdpconfig.get("MaxRescheduling") == 3
    now[0] += 0.2
    assert gdpconfig.get("MaxRescheduling") == 9


def test_every_registered_default_passes_its_own_validation(world):
    for p in gdpconfig.REGISTRY.values():
        assert p.coerce(p.default) == p.default


def test_json_parameters_refuse_nan_and_infinity(db):
    from core.gdpconfig import param

    with pytest.raises(ConfigError, match="NaN"):
        param("WMSHistory").coerce('{"G": {"MaxGlobalCorrectionFactor": NaN}}')


def test_a_stored_corrector_stays_in_force_when_its_group_later_gets_jobsharing(users):
    from matcher.services.groups import update_group
    from shares.models import GridGroup

    mine = {
        "Mine": {
            "MaxGlobalCorrectionFactor": 1.5,
            "H": {"TimeSpan": 3600, "Weight": 1, "MaxCorrection": 2},
        },
        "U": {
            "Group": "lhcb_user",
            "MaxGlobalCorrectionFactor": 1.5,
            "H": {"TimeSpan": 3600, "Weight": 1, "MaxCorrection": 2},
        },
    }
    gdpconfig.set_value("WMSHistory", mine)
    update_group(GridGroup.objects.get(name="lhcb_user"), {"job_sharing": True})
    gdpconfig.invalidate()
    assert gdpconfig.get("WMSHistory") == mine  # not silently replaced by the seed's example
    with pytest.raises(ConfigError, match="JobSharing"):
        gdpconfig.set_value("WMSHistory", mine)  # but a new edit is checked against it
