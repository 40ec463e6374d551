"""The Submit a job form's JDL is bounded (it is stored with the job): at most MaxJDLBytes
bytes and MaxJDLAttributes attributes, else the form names the JDL and nothing is stored."""

import pytest

from core import gdpconfig
from core.gdpconfig import ConfigError
from matcher.models import Job

FORM = "/jobs/submit/"
HEAD = 'JobName = "big"; OwnerGroup = "lhcb_user"; CPUTime = 3600;\n'


def attributes(n: int) -> str:
    return "".join(f"A{i} = {i};\n" for i in range(n))


def submit(client, users, text):
    client.force_login(users["alice"])
    return client.post(FORM, {"jdl": text})


def test_a_2_mb_jdl_is_refused_naming_the_jdl_and_nothing_is_stored(client, users):
    text = HEAD + f'Arguments = "{"x" * 2 * 1024 * 1024}";'
    r = submit(client, users, text)
    assert r.status_code == 200
    html = r.content.decode()
    assert "The JDL is 2097" in html and "MaxJDLBytes" in html
    assert not Job.objects.exists()


def test_a_jdl_of_50000_attributes_is_refused_naming_the_jdl_and_nothing_is_stored(client, users):
    gdpconfig.set_value("MaxJDLBytes", 1024 * 1024)  # so that the count is what refuses it
    r = submit(client, users, HEAD + attributes(50_000))
    assert r.status_code == 200
    html = r.content.decode()
    assert "JDL: 50003 attributes; at most 200" in html and "MaxJDLAttributes" in html
    assert not Job.objects.exists()


def test_one_attribute_over_the_limit_is_refused_and_the_limit_itself_is_taken(client, users):
    r = submit(client, users, HEAD + attributes(198))
    assert r.status_code == 200 and "201 attributes" in r.content.decode()
    assert not Job.objects.exists()
    r = submit(client, users, HEAD + attributes(197))
    assert r.status_code == 302
    assert Job.objects.get().jdl.startswith("JobName")


def test_the_bounds_are_parameters_staff_change_within_their_own_bounds(client, users):
    gdpconfig.set_value("MaxJDLAttributes", 300)
    r = submit(client, users, HEAD + attributes(250))
    assert r.status_code == 302
    for name, value in [("MaxJDLBytes", 10**9), ("MaxJDLBytes", 0), ("MaxJDLAttributes", 10**6)]:
        with pytest.raises(ConfigError):
            gdpconfig.set_value(name, value)
