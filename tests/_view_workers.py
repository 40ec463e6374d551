"""Child processes of tests/test_matcher_view_pg.py: another matcher host's process that changes
the TaskQueues through the services, as a submission, a kill and a priorities cycle would."""


def change_taskqueues(db_name, alice_id, bob_id, kill_job_id, out):
    from tests._fault_workers import child_django

    child_django(db_name)
    from django.conf import settings
    from django.db import connections

    from matcher import services
    from matcher.taskqueue_priorities import recompute_priorities
    from shares.models import GridGroup, User

    settings.HOUSEKEEPING_IN_BACKGROUND = False  # this child's own recomputations at once
    try:
        alice, bob = User.objects.get(pk=alice_id), User.objects.get(pk=bob_id)
        group = GridGroup.objects.get(name="lhcb_user")
        spec = {
            "owner_group": group,
            "setup": "LHCb-Production",
            "cpu_time": 100,
            "user_priority": 3,
        }
        [new] = services.submit_jobs(alice, [{**spec, "sites": ["LCG.CERN.ch"]}])
        services.kill_job(kill_job_id, bob)
        recompute_priorities()
        out.put(new.task_queue_id)
    finally:
        connections.close_all()
