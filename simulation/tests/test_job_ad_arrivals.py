"""The simulator's ClassAd job ads: stored by the classads service as the API would store the
same submission."""

import random
from types import SimpleNamespace

from api.classads.serializers import JobAdSubmitSerializer
from classads import services as classad_services
from classads.models import JobAd, SiteAd
from simulation import services

FIELDS = ("owner_id", "owner_group_id", "is_dag", "setup", "user_priority", "text", "nodes")


def test_arriving_job_ads_are_carols_in_lhcb_mc_after_a_site_ad_per_demo_site(users):
    assert services.arrive_job_ads(random.Random(1), 3) == 3
    assert SiteAd.objects.count() == len(services.DEMO_SITES)
    ads = list(JobAd.objects.all())
    assert len(ads) == 3
    assert {(a.owner.username, a.owner_group.name) for a in ads} == {("carol", "lhcb_mc")}
    assert all(a.name.startswith("sim.ad.") and not a.is_dag for a in ads)


def test_an_arriving_job_ad_is_the_one_the_api_stores_for_the_same_submission(users):
    services.arrive_job_ads(random.Random(1), 1)
    simulated = JobAd.objects.get()
    body = JobAdSubmitSerializer(
        data={"ad": services.JOB_AD, "owner_group": "lhcb_mc", "name": simulated.name},
        context={"request": SimpleNamespace(user=users["carol"])},
    )
    assert body.is_valid(), body.errors
    [submitted] = classad_services.submit_job_ads(users["carol"], [body.validated_data])
    assert {f: getattr(submitted, f) for f in FIELDS} == {f: getattr(simulated, f) for f in FIELDS}


def test_no_job_ads_arrive_without_carol(world):
    from shares.models import User

    User.objects.filter(username="carol").delete()
    assert services.arrive_job_ads(random.Random(1), 3) == 0
    assert not JobAd.objects.exists()
