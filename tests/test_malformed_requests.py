"""One malformed request of each kind the pilot, matching and shares endpoints take: 400,
naming the offending field."""

import pytest

CASES = [
    ("post", "/api/v1/pilots/", {"site": "X"}, "reference"),
    ("post", "/api/v1/pilots/", {"reference": 5, "site": "X"}, "reference"),
    ("post", "/api/v1/pilots/", {"reference": "r", "site": "X", "colour": 1}, "colour"),
    ("post", "/api/v1/jobs/1/status/", {"status": "running"}, "pilot_reference"),
    ("post", "/api/v1/jobs/1/status/", {"status": "flying", "pilot_reference": "p"}, "status"),
    ("post", "/api/v1/jobs/1/heartbeat/", {}, "pilot_reference"),
    ("post", "/api/v1/task-queues/matching/", {"site": "any"}, "cpu_time"),
    ("patch", "/api/v1/config/WMSHistory/", {"value": "{bad"}, "value"),
    ("patch", "/api/v1/groups/{group}/", {"job_share": "lots"}, "job_share"),
]


@pytest.mark.parametrize(("method", "url", "body", "field"), CASES)
def test_a_malformed_request_answers_400_naming_the_field(api, users, method, url, body, field):
    from shares.models import GridGroup

    url = url.format(group=GridGroup.objects.get(name="lhcb_mc").pk)
    r = getattr(api(users["admin"]), method)(url, body, format="json")
    assert r.status_code == 400, (r.status_code, getattr(r, "data", None))
    assert field in r.data, r.data
