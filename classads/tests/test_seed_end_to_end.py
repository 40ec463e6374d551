"""The seed's USCMS recipe end to end: its site ad, its DAG submit file, the negotiator, the
DAG's nodes in TaskQueues at the matched site, and the matchmaker monitor."""

import pytest

from classads.models import JobAd, JobAdNode, SiteAd, SiteAdSample
from classads.tests.conftest import SEED_DAG_SUBMIT, SEED_NODES
from core import clock
from core.cycles import run_cycle
from matcher.models import Job, JobStatus, TaskQueueJob

pytestmark = pytest.mark.django_db

SEED_ENV = (
    "SiteGatekeeperURL=dill.hep.wisc.edu:/jobmanager-condor;SiteVDTLocation=/dpe;"
    "SiteWorkingArea=/scratch/work;SiteExportDir=/scratch/export"
)


def negotiate():
    run = run_cycle("negotiator")
    assert run.status == "success", run.error
    return run.counts


def test_the_seeds_dag_matches_the_seeds_site_and_expands_its_dollar_dollar_references(
    seed_site, submit_ad
):
    response = submit_ad(SEED_DAG_SUBMIT, name="group.dag", nodes=SEED_NODES)
    assert response.status_code == 201, response.data
    assert response.data["status"] == "idle"

    counts = negotiate()

    assert counts["matches"] == 1
    dag = JobAd.objects.get(pk=response.data["id"])
    assert dag.status == "matched"
    assert dag.site_ad_name == "uw-hep-USCMS-Site"
    assert dag.site == "uw-hep"  # MOP_SITE names the DIRAC site
    assert dag.match_attrs["MATCH_MatchmakerURL"] == "ramen.fnal.gov:/jobmanager-condor"
    assert dag.match_attrs["MATCH_SiteEnvironment"] == SEED_ENV
    assert dag.match_attrs["MATCH_EXP_GlobusScheduler"] == '"ramen.fnal.gov:/jobmanager-condor"'
    assert dag.match_attrs["MATCH_EXP_Environment"].startswith(f'"{SEED_ENV};PATH=')


def test_a_matched_dag_binds_all_its_nodes_to_the_site_with_the_sites_environment(
    seed_site, submit_ad
):
    dag_id = submit_ad(SEED_DAG_SUBMIT, name="group.dag", nodes=SEED_NODES).data["id"]
    negotiate()

    nodes = JobAdNode.objects.filter(job_ad_id=dag_id).select_related("job")
    assert [n.name for n in nodes] == ["stage-in", "run", "stage-out", "cleanup"]
    for node in nodes:
        job = node.job
        assert job.status == JobStatus.ACTIVATED
        assert job.sites == ["uw-hep"]  # only a pilot at the matched site may take it
        assert TaskQueueJob.objects.filter(job=job).exists()
        assert job.task_queue.sites == ["uw-hep"]
        # The seed's generic node: its gatekeeper and areas come from the site's environment.
        assert 'GlobusScheduler = "dill.hep.wisc.edu:/jobmanager-condor"' in job.jdl
        assert 'RemoteIwd = "/scratch/work"' in job.jdl
        assert 'SiteEnvironment = "SiteGatekeeperURL=dill.hep.wisc.edu' in job.jdl
        assert "SiteVDTLocation=/dpe;SiteExportDir=/scratch/export" in job.jdl
    assert [n.job.cpu_time for n in nodes] == [600, 3600, 600, 60]


def test_each_match_increments_curmatches_and_maxmatches_then_stops_further_matches(
    seed_site, submit_ad
):
    ids = [submit_ad(SEED_DAG_SUBMIT, name=f"dag{i}").data["id"] for i in range(3)]

    counts = negotiate()

    # MaxMatches = 2 and Requirements = (CurMatches < MaxMatches) && ...: two, not three.
    assert counts["matches"] == 2
    site = SiteAd.objects.get(name="uw-hep-USCMS-Site")
    assert site.cur_matches == 2
    statuses = dict(JobAd.objects.filter(pk__in=ids).values_list("pk", "status"))
    assert sorted(statuses.values()) == ["idle", "matched", "matched"]
    assert statuses[ids[2]] == "idle"  # fair share within one owner: the oldest first
    assert negotiate()["matches"] == 0  # the site stays full across cycles
    assert SiteAdSample.objects.filter(site_ad=site, source="negotiator").exists()


def test_the_monitor_brings_curmatches_back_down_after_the_jobs_finish(seed_site, submit_ad):
    first = submit_ad(SEED_DAG_SUBMIT, name="dag1").data["id"]
    submit_ad(SEED_DAG_SUBMIT, name="dag2")
    third = submit_ad(SEED_DAG_SUBMIT, name="dag3").data["id"]
    negotiate()
    site = SiteAd.objects.get(name="uw-hep-USCMS-Site")
    assert site.cur_matches == 2
    old_sequence = site.sequence

    # The first DAG's node finishes; the second's is still queued.
    node_jobs = Job.objects.filter(classad_node__job_ad_id=first)
    node_jobs.update(status=JobStatus.FINISHED)
    clock.advance(120)
    run = run_cycle("matchmaker_monitor")
    assert run.status == "success", run.error

    site.refresh_from_db()
    assert site.cur_matches == 1
    assert site.sequence > old_sequence  # re-advertised with a higher UpdateSequenceNumber
    assert "CurMatches = 1" in site.text
    assert JobAd.objects.get(pk=first).status == "completed"
    # Room again: the third DAG matches on the next cycle.
    assert negotiate()["matches"] == 1
    assert JobAd.objects.get(pk=third).status == "matched"


def test_a_pilot_at_the_matched_site_runs_a_node_of_the_dag(seed_site, submit_ad, users):
    from matcher import dispatcher
    from matcher.models import ComputingElement, Site

    dag_id = submit_ad(SEED_DAG_SUBMIT, name="group.dag", nodes=SEED_NODES[:1]).data["id"]
    negotiate()
    site = Site.objects.create(name="uw-hep")
    ComputingElement.objects.create(site=site, name="dill.hep.wisc.edu", cpu_time_limit=86400)
    from api.matcher.resources import ResourceDescriptionSerializer

    body = ResourceDescriptionSerializer(
        data={"site": "uw-hep", "grid_ce": "dill.hep.wisc.edu", "cpu_time": 86400, "setup": "any"}
    )
    assert body.is_valid(), body.errors
    found = dispatcher.match_job(body.resource(users["admin"]), "pilot-1")
    assert found is not None
    assert JobAdNode.objects.get(job_id=found.job.id).job_ad_id == dag_id
    assert Job.objects.get(pk=found.job.id).status == JobStatus.SENT
