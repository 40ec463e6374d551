"""One malformed request of each kind on the brokerage's writable endpoints: 400 naming the
field, and nothing stored."""

import pytest

from brokerage.models import GlobalShare, NetworkLink, Nucleus, PandaQueue, Storage, UserQuota
from brokerage.topology_import import import_topology
from simulation import panda_demo as demo

CASES = [
    ("nuclei", Nucleus, {"name": "N2", "site": "LCG.NOWHERE", "state": "ACTIVE"}, "site"),
    (
        "nuclei",
        Nucleus,
        {"name": "N2", "site": "LCG.PIC.es", "bare_nucleus": "maybe"},
        "bare_nucleus",
    ),
    ("storages", Storage, {"name": "S2", "site": "LCG.PIC.es", "space_free": -1}, "space_free"),
    ("storages", Storage, {"name": "S2", "site": "LCG.PIC.es", "nucleus": "NOPE"}, "nucleus"),
    ("panda-queues", PandaQueue, {"name": "Q2", "site": "LCG.PIC.es", "status": "on"}, "status"),
    (
        "panda-queues",
        PandaQueue,
        {"name": "Q2", "site": "LCG.PIC.es", "site_class": "top"},
        "site_class",
    ),
    (
        "panda-queues",
        PandaQueue,
        {"name": "Q2", "site": "LCG.PIC.es", "core_count": "eight"},
        "core_count",
    ),
    (
        "network-links",
        NetworkLink,
        {"source": "LCG.PIC.es", "nucleus": "CERN-PROD", "queued_files": -3},
        "queued_files",
    ),
    ("network-links", NetworkLink, {"source": "LCG.PIC.es", "nucleus": "NOPE"}, "nucleus"),
    ("global-shares", GlobalShare, {"name": "Too much", "target_pct": 150}, "target_pct"),
    ("user-quotas", UserQuota, {"user": "nobody", "disk_quota_gb": 10}, "user"),
    ("user-quotas", UserQuota, {"user": "bob", "disk_quota_gb": -10}, "disk_quota_gb"),
]


@pytest.mark.parametrize(("prefix", "model", "body", "field"), CASES)
def test_a_malformed_topology_request_names_its_field_and_stores_nothing(
    world, api, users, prefix, model, body, field
):
    import_topology(demo.topology())
    before = model.objects.count()
    r = api(users["admin"]).post(f"/api/v1/{prefix}/", body, format="json")
    assert r.status_code == 400, r.content
    assert field in r.data, r.data
    assert model.objects.count() == before
