"""Every gdpconfig parameter is held to the columns and uses it feeds.

A staff setting used to break submission for everyone (a 100,000-character DefaultSetup made
every job submitted without a setup a 500: `value too long for type character varying(64)`),
and a NUL inside a value was a 500 in gdpconfig._store on PostgreSQL. Each path a staff member
takes (the API's PATCH /api/v1/config/<name>/ and the /config/ page's form) now answers 400
naming the parameter and stores nothing.
"""

import pytest

from core import gdpconfig
from core.gdpconfig import BOOL, CHOICE, FLOAT, INT, INT_LIST, JSON, STR, STR_LIST, Param
from core.models import ParameterValue
from matcher.models import Job

JOBS = "/api/v1/jobs/"
LONG_SETUP = "S" * 100_000


def config_url(name: str) -> str:
    return f"/api/v1/config/{name}/"


def stored(name: str) -> bool:
    return ParameterValue.objects.filter(name=name).exists()


def post_form(client, name: str, text: str):
    """The /config/ page's own form for one parameter, as the browser posts it."""
    return client.post(
        "/config/", {"name": name, f"{name}-value": text, f"{name}-comment": "constraints test"}
    )


def form_error(response, name: str) -> str:
    """The HTML of the parameter's block on the page, where its error is shown."""
    html = response.content.decode()
    start = html.index(f'id="param-{name}"')
    return html[start : html.index("</form>", start)]


def a_job_without_a_setup_is_accepted(api, users) -> Job:
    r = api(users["alice"]).post(JOBS, {"cpu_time": 3600}, format="json")
    assert r.status_code == 201, r.content
    return Job.objects.get(pk=r.data["id"])


# --- DefaultSetup: the column it feeds is 64 characters ----------------------------------------


@pytest.mark.parametrize("length", [65, 100_000])
def test_a_default_setup_longer_than_the_jobs_setup_column_answers_400_through_the_api(
    api, users, length
):
    r = api(users["admin"]).patch(
        config_url("DefaultSetup"), {"value": "S" * length}, format="json"
    )
    assert r.status_code == 400, r.content
    assert "DefaultSetup" in str(r.data["value"]) and "at most 64" in str(r.data["value"])
    assert not stored("DefaultSetup")
    job = a_job_without_a_setup_is_accepted(api, users)
    assert job.setup == "LHCb-Production"


@pytest.mark.parametrize("length", [65, 100_000])
def test_a_default_setup_longer_than_the_jobs_setup_column_is_refused_beside_its_field_on_the_page(
    client, api, users, length
):
    client.force_login(users["admin"])
    r = post_form(client, "DefaultSetup", "S" * length)
    assert r.status_code == 400
    assert "at most 64 characters" in form_error(r, "DefaultSetup")
    assert not stored("DefaultSetup")
    assert a_job_without_a_setup_is_accepted(api, users).setup == "LHCb-Production"


def test_a_default_setup_that_fits_is_what_a_job_without_a_setup_gets(api, users):
    r = api(users["admin"]).patch(
        config_url("DefaultSetup"), {"value": "LHCb-Certification"}, format="json"
    )
    assert r.status_code == 200, r.content
    assert a_job_without_a_setup_is_accepted(api, users).setup == "LHCb-Certification"


def test_an_over_long_default_setup_stored_before_the_check_reads_as_the_default(api, users):
    # A row written under the old, unbounded definition must not keep breaking submissions.
    ParameterValue.objects.create(name="DefaultSetup", version=1, value=LONG_SETUP)
    gdpconfig.invalidate()
    assert gdpconfig.get("DefaultSetup") == "LHCb-Production"
    assert a_job_without_a_setup_is_accepted(api, users).setup == "LHCb-Production"


@pytest.mark.parametrize("value", ["LHCb Production", "-LHCb", "LHCb/Production", "Setup;x"])
def test_a_default_setup_is_a_name(api, users, value):
    r = api(users["admin"]).patch(config_url("DefaultSetup"), {"value": value}, format="json")
    assert r.status_code == 400 and "Setup name" in str(r.data["value"])
    assert not stored("DefaultSetup")


# --- NUL and other control characters, anywhere in a value -------------------------------------

NUL_VALUES = [
    ("DefaultSetup", "LHCb\x00Production"),
    ("GenericPilotDN", "/DC=ch/CN=pi\x00lot"),
    ("SubmitPools", ["gLite", "Lo\x00cal"]),
    ("SiteAdSiteAttributes", ["GridSite", "MOP\x00SITE"]),
    ("SubmitPoolBackends", {"gLite": "simulated", "Lo\x00cal": "local"}),  # a key
    ("SubmitPoolBackends", {"gLite": "simu\x00lated"}),  # a value
    ("SubmitPoolBackends", '{"gLite": "simulated", "x\\u0000": "local"}'),  # escaped, in text
    ("SOFTWARE_ALL", {"tags": [{"tag": "VO-atlas\x00"}]}),  # deep inside
    (
        "WMSHistory",
        {
            "G\x00": {
                "MaxGlobalCorrectionFactor": 3,
                "H": {"TimeSpan": 3600, "Weight": 1, "MaxCorrection": 2},
            }
        },
    ),
    ("RetentionExportDirectory", "/var/tmp/\x1b[31mexport"),  # an escape sequence, not only NUL
]


@pytest.mark.parametrize(("name", "value"), NUL_VALUES)
def test_a_control_character_anywhere_in_a_value_answers_400_naming_the_parameter(
    api, users, name, value
):
    r = api(users["admin"]).patch(config_url(name), {"value": value}, format="json")
    assert r.status_code == 400, (r.status_code, r.content)
    message = str(r.data["value"])
    assert name in message and "control characters" in message
    assert not stored(name)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("SubmitPoolBackends", '{"gLite": "simulated", "x\\u0000": "local"}'),
        ("SOFTWARE_ALL", '{"tags": [{"tag": "a\\u0000b"}]}'),
        ("SubmitPools", '["gLite", "x\\u0000"]'),
    ],
)
def test_a_nul_escaped_in_json_text_on_the_page_is_refused_beside_its_field(
    client, users, name, text
):
    client.force_login(users["admin"])
    r = post_form(client, name, text)
    assert r.status_code == 400
    assert "control characters" in form_error(r, name)
    assert not stored(name)


def test_a_nul_typed_into_the_page_is_refused_and_nothing_stored(client, users):
    client.force_login(users["admin"])
    r = post_form(client, "DefaultSetup", "LHCb\x00Production")
    assert r.status_code == 400
    assert not stored("DefaultSetup")


# --- JSON parameters: their keys are declared ----------------------------------------------------

SLICE = {"TimeSpan": 3600, "Weight": 1, "MaxCorrection": 2}
UNKNOWN_KEYS = [
    ("SimulatedPilotSeconds", {"Submitted": 30, "Submited": 30}, "Submited"),
    ("SOFTWARE_ALL", {"tags": [], "tagz": []}, "tagz"),
    ("SOFTWARE_ALL", {"tags": [{"tag": "x", "colour": "red"}]}, "colour"),
    (
        "WMSHistory",
        {"G": {"MaxGlobalCorrectionFactor": 3, "H": {**SLICE, "Colour": 1}}},
        "Colour",
    ),
    ("WMSHistory", {"G": {"MaxGlobalCorrectionFactor": 3, "Typo": 1, "H": SLICE}}, "Typo"),
]


@pytest.mark.parametrize(("name", "value", "key"), UNKNOWN_KEYS)
def test_an_unknown_key_in_a_json_parameter_answers_400_naming_the_key(
    api, users, name, value, key
):
    r = api(users["admin"]).patch(config_url(name), {"value": value}, format="json")
    assert r.status_code == 400, (r.status_code, r.content)
    message = str(r.data["value"])
    assert name in message and key in message
    assert not stored(name)


def test_an_unknown_key_on_the_page_is_refused_beside_its_field(client, users):
    client.force_login(users["admin"])
    r = post_form(client, "SimulatedPilotSeconds", '{"Submitted": 30, "Submited": 30}')
    assert r.status_code == 400
    block = form_error(r, "SimulatedPilotSeconds")
    assert "Submited" in block and "unknown key" in block
    assert not stored("SimulatedPilotSeconds")


def test_every_json_parameter_declares_its_structure():
    for p in gdpconfig.REGISTRY.values():
        if p.kind == JSON:
            assert p.shape is not None, p.name


def test_a_number_parameter_without_both_bounds_or_json_without_a_shape_cannot_be_registered():
    with pytest.raises(ValueError, match="minimum and maximum"):
        gdpconfig.register(Param(name="Unbounded", kind=INT, default=1, help="", minimum=0))
    with pytest.raises(ValueError, match="shape"):
        gdpconfig.register(Param(name="Shapeless", kind=JSON, default={}, help=""))
    assert "Unbounded" not in gdpconfig.REGISTRY and "Shapeless" not in gdpconfig.REGISTRY


# --- family members: their names are stored in a 100-character column -------------------------


@pytest.mark.parametrize("suffix", ["x" * 200, "Ex%00press", "Ex%01press"])
def test_a_family_member_whose_name_cannot_be_stored_is_no_parameter(api, users, suffix):
    r = api(users["admin"]).patch(
        config_url(f"DISK_THRESHOLD_{suffix}"), {"value": 5}, format="json"
    )
    assert r.status_code == 404
    assert not ParameterValue.objects.exists()


def test_a_family_member_name_too_long_on_the_page_is_refused_with_a_message(client, users):
    client.force_login(users["admin"])
    r = client.post(
        "/config/",
        {
            "name": "DISK_THRESHOLD_<gshare>",
            "suffix": "x" * 200,
            "DISK_THRESHOLD_<gshare>-value": "5",
        },
        follow=True,
    )
    assert "the gshare part has at most 64 characters" in r.content.decode()
    assert not ParameterValue.objects.exists()


# --- every registered parameter: a value beyond its declared kind and bounds is refused -------


def addressable(p: Param) -> str:
    """The name a client uses: a family is set through a member."""
    return p.prefix + "Express" if p.family else p.name


def bad_values(p: Param) -> list:
    """Values that break the parameter's declared kind or bounds."""
    too_long = "x" * (p.max_length + 1)
    if p.kind == INT:
        return [p.minimum - 1, p.maximum + 1, "many", True, 1.5, [1]]
    if p.kind == FLOAT:
        return [p.minimum - 1, p.maximum * 2 + 1, "much", True, ""]
    if p.kind == INT_LIST:
        return [[p.maximum + 1], [p.minimum - 1], list(range(1, p.max_items + 2)), {"a": 1}]
    if p.kind == BOOL:
        return ["maybe", 3, ""]
    if p.kind == STR:
        return [too_long, "a\x00b", 5, ["a"]]
    if p.kind == CHOICE:
        return [too_long, "a\x00b", f"not-{p.choices[0]}", 5]
    if p.kind == STR_LIST:
        many = [f"n{i}" for i in range(p.max_items + 1)]
        return [[too_long], ["a\x00b"], [5], many, 5]
    assert p.kind == JSON
    return [{too_long: 1}, {"a\x00": 1}, 5, "{not json"]


ALL_PARAMETERS = sorted(gdpconfig.REGISTRY)


def test_the_parametrised_check_covers_every_registered_parameter():
    assert ALL_PARAMETERS == sorted(gdpconfig.REGISTRY)
    assert {"DefaultSetup", "WMSHistory", "SOFTWARE_ALL", "RetentionJobDays"} <= set(ALL_PARAMETERS)


@pytest.mark.parametrize("name", ALL_PARAMETERS)
def test_every_parameter_refuses_values_beyond_its_declared_kind_and_bounds(api, users, name):
    p = gdpconfig.REGISTRY[name]
    target = addressable(p)
    admin = api(users["admin"])
    for value in bad_values(p):
        r = admin.patch(config_url(target), {"value": value}, format="json")
        assert r.status_code == 400, (target, repr(value)[:80], r.status_code)
        assert target in str(r.data["value"]), r.data
    assert not stored(target)
    # ... and its default fits its own declaration, also when set through the API.
    assert p.coerce(p.default) == p.default
    r = admin.patch(config_url(target), {"value": p.default}, format="json")
    assert r.status_code == 200, (target, r.content)
