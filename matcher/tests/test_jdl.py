import pytest

from matcher.jdl import JDLError, parse_jdl
from matcher.models import Job

JDL = """
JobName = "reco-1";
Executable = "run.sh";
OwnerGroup = "lhcb_user";
CPUTime = 3600;
Site = {"LCG.CERN.ch", "LCG.PIC.es"};
BannedSites = "LCG.RAL.uk";
Platform = "x86_64-el9";
Tags = {"4Processors"};
Priority = 1 + 2;
"""


def test_a_dirac_jdl_becomes_a_submission():
    payload, names = parse_jdl(JDL)
    assert payload == {
        "name": "reco-1",
        "executable": "run.sh",
        "owner_group": "lhcb_user",
        "cpu_time": 3600,
        "sites": ["LCG.CERN.ch", "LCG.PIC.es"],
        "banned_sites": ["LCG.RAL.uk"],
        "platforms": ["x86_64-el9"],
        "tags": ["4Processors"],
        "user_priority": 3,
    }
    assert names["sites"] == "Site"


def test_a_jdl_in_brackets_parses_too():
    payload, _ = parse_jdl('[ CPUTime = 10; Sites = {"A"} ]')
    assert payload == {"cpu_time": 10, "sites": ["A"]}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("CPUTime = ;", "JDL"),
        ("[ CPUTime = 5", "JDL"),
        ("", "JDL"),
        ("CPUTime = NoSuchAttr;", "CPUTime"),
        ('Site = "A"; Sites = {"B"};', "Sites"),
    ],
)
def test_a_bad_jdl_is_an_error_naming_the_attribute(text, field):
    with pytest.raises(JDLError) as err:
        parse_jdl(text)
    assert err.value.field.lower() == field.lower()


def test_the_form_submits_a_jdl_and_stores_it_with_the_job(client, users):
    client.force_login(users["alice"])
    r = client.post("/jobs/submit/", {"jdl": JDL})
    assert r.status_code == 302
    job = Job.objects.get()
    assert r.url == f"/jobs/{job.pk}/"
    assert job.cpu_time == 3600 and job.user_priority == 3 and job.jdl == JDL.strip()
    assert job.banned_sites == ["LCG.RAL.uk"]


def test_a_jdl_with_a_bad_value_shows_the_jdl_attribute_and_stores_nothing(client, users):
    client.force_login(users["alice"])
    r = client.post("/jobs/submit/", {"jdl": 'CPUTime = -4; Site = {"Atlantis"};'})
    html = r.content.decode()
    assert r.status_code == 200
    assert "CPUTime:" in html and "Site: Unknown site: Atlantis." in html
    assert not Job.objects.exists()


def test_the_form_submits_a_job_from_its_fields(client, users):
    client.force_login(users["bob"])
    r = client.post(
        "/jobs/submit/",
        {
            "owner_group": "lhcb_user",
            "cpu_time": 700,
            "user_priority": 2,
            "sites": ["LCG.CERN.ch"],
            "platforms": "x86_64-el9, aarch64-el9",
        },
    )
    assert r.status_code == 302
    job = Job.objects.get()
    assert job.platforms == ["aarch64-el9", "x86_64-el9"] and job.sites == ["LCG.CERN.ch"]


def test_a_form_error_is_shown_next_to_its_field(client, users):
    client.force_login(users["bob"])
    r = client.post("/jobs/submit/", {"owner_group": "lhcb_user", "cpu_time": -1})
    assert r.status_code == 200
    assert "Ensure this value is greater than or equal to 1" in r.content.decode()
    assert not Job.objects.exists()
