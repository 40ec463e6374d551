"""Who may do what: six subjects × every API endpoint and every page, each its own test.

Subjects: anonymous; alice (a user, lhcb_user: no JobSharing); bob (another lhcb_user user);
erin (lhcb_mc, which has JobSharing, so she shares carol's lhcb_mc jobs); pilot (the generic
pilot credential, lhcb_pilot); admin (staff).

Expectations come from docs/developer-guide.md, Who sees what, and the code: anonymous visitors see
nothing but the login page (API: 401 saying how to authenticate; pages, the API's documentation and,
for a browser, its schema: a redirect to the login page that comes back); a user sees and acts on
its own jobs, tasks and job ads and on those of its JobSharing groups, and someone else's are 404
(their existence is not revealed); a pilot reports only on the jobs it was given (403); staff edit
shares, parameters and topology, everyone else gets 403; production tasks need a group with the
ProductionManagement property (erin's lhcb_mc), analysis tasks are open to every user.

The list of routes is walked from the URL resolver: a route with no row here fails the
completeness test, so a new page or endpoint cannot be forgotten.
"""

from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from rest_framework.test import APIClient

from tests._matrix_world import JOB_AD, build_demo, populate, shared_state

SUBJECTS = ["anonymous", "alice", "bob", "erin", "pilot", "admin"]
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
PASSWORD = "gridwms"  # simulation.demo.USER_PASSWORD
PARAM = "CycleStaleSeconds"

# Expectation tokens, one per subject in SUBJECTS order:
#   D    denied to an anonymous visitor: API 401 with WWW-Authenticate, a page redirects to
#        /login/?next=<the page>
#   R    a redirect (302) somewhere other than /login/: a form action done (or the admin's
#        own login page)
#   a|b  either status

A = "D 200 200 200 200 200"  # every signed-in subject reads it
# The Submit a task form's other fields.
TASK_FORM = {
    "name": "form",
    "processing_type": "simul",
    "core_count": 1,
    "ram_count": 1000,
    "cpu_time": 10,
    "n_jobs": 1,
    "n_events_per_job": 10,
}
STAFF_WRITE = "D 403 403 403 403"  # + the admin's status

ROWS = [
    # --- API: authentication and discovery ---------------------------------------------------
    ("api:api-root", "GET", "/api/v1/", None, A),
    (
        "api:api-token",
        "POST",
        "/api/v1/auth/token/",
        {"username": "alice", "password": PASSWORD},
        "200 200 200 200 200 200",
    ),
    ("api:api-token", "POST", "/api/v1/auth/token/", {"username": "alice"}, "400 " * 5 + "400"),
    ("api:user-me", "GET", "/api/v1/users/me/", None, A),
    # --- API: PanDA's client's job API (401 with `WWW-Authenticate: Bearer`; each user gets
    # its own jobs, None or False for others': tests/test_panda_client_api.py) ---------------
    ("api:panda-is-alive", "GET", "/api/v1/system/is_alive", None, "200 " * 5 + "200"),
    ("api:panda-job-submit", "POST", "/api/v1/job/submit", {"jobs": "[]"}, "401" + " 400" * 5),
    (
        "api:panda-job-description",
        "GET",
        "/api/v1/job/get_description?job_ids={alice_job}",
        None,
        "401" + " 200" * 5,
    ),
    ("api:panda-job-kill", "POST", "/api/v1/job/kill", {"job_ids": []}, "401" + " 200" * 5),
    # --- PanDA's pilot at panda-server's paths: token clients only, so a signed-in browser is
    # refused too (what a pilot's token may do: tests/test_panda_pilot_endpoints.py) ----------
    ("panda-getjob", "POST", "/server/panda/getJob", {}, "401 " * 5 + "401"),
    ("panda-updatejob", "POST", "/server/panda/updateJob", {}, "401 " * 5 + "401"),
    ("panda-getstatus", "POST", "/server/panda/getStatus", {}, "401 " * 5 + "401"),
    ("panda-queuedata", "GET", "/cache/schedconfig/Q.all.json", None, "401 " * 5 + "401"),
    ("panda-queues", "GET", "/cache/schedconfig/Q.json", None, "401 " * 5 + "401"),
    ("panda-storages", "GET", "/cache/ddmendpoints.json", None, "401 " * 5 + "401"),
    # --- API: jobs -------------------------------------------------------------------------
    ("api:job-list", "GET", "/api/v1/jobs/", None, A),
    ("api:job-export", "GET", "/api/v1/jobs/export/", None, A),
    ("api:job-list", "POST", "/api/v1/jobs/", {"cpu_time": 1000}, "D 201 201 201 201 201"),
    (
        "api:job-list",
        "POST",
        "/api/v1/jobs/",
        {"cpu_time": 1000, "owner_group": "lhcb_data"},  # a group none of them is in
        "D 400 400 400 400 400",
    ),
    ("api:job-detail", "GET", "/api/v1/jobs/{alice_job}/", None, "D 200 404 404 404 200"),
    ("api:job-detail", "GET", "/api/v1/jobs/{carol_job}/", None, "D 404 404 200 404 200"),
    ("api:job-detail", "GET", "/api/v1/jobs/{carol_user_job}/", None, "D 404 404 404 404 200"),
    (
        "api:job-analysis",
        "GET",
        "/api/v1/jobs/{alice_job}/analysis/",
        None,
        "D 200 404 404 404 200",
    ),
    (
        "api:job-analysis",
        "GET",
        "/api/v1/jobs/{carol_job}/analysis/",
        None,
        "D 404 404 200 404 200",
    ),
    ("api:job-kill", "POST", "/api/v1/jobs/{alice_job}/kill/", None, "D 200 404 404 404 200"),
    ("api:job-kill", "POST", "/api/v1/jobs/{carol_job}/kill/", None, "D 404 404 200 404 200"),
    (
        "api:job-reschedule",
        "POST",
        "/api/v1/jobs/{alice_job}/reschedule/",
        None,
        "D 409 404 404 404 409",  # allowed, but a waiting job has nothing to reschedule
    ),
    (
        "api:job-reschedule",
        "POST",
        "/api/v1/jobs/{matched_job}/reschedule/",
        None,
        "D 404 404 404 404 200",  # a job a pilot holds: staff only (the claim is revoked)
    ),
    (
        "api:job-report-status",
        "POST",
        "/api/v1/jobs/{matched_job}/status/",
        {"status": "starting", "pilot_reference": "p-1"},
        # only the claiming credential: another one's "p-1" is another pilot, and staff too
        # report only through their own pilots (they kill or reschedule instead)
        "D 403 403 403 200 403",
    ),
    (
        "api:job-report-status",
        "POST",
        "/api/v1/jobs/{matched_job}/status/",
        {"status": "starting", "pilot_reference": "never-registered"},
        "D 403 403 403 403 403",  # an unregistered reference holds nothing
    ),
    (
        "api:job-report-status",
        "POST",
        "/api/v1/jobs/{alice_job}/status/",  # not the job this pilot was given
        {"status": "starting", "pilot_reference": "p-1"},
        "D 403 403 403 403 403",
    ),
    (
        "api:job-heartbeat",
        "POST",
        "/api/v1/jobs/{matched_job}/heartbeat/",
        {"pilot_reference": "p-1"},
        "D 403 403 403 204 403",
    ),
    (
        "api:job-heartbeat",
        "POST",
        "/api/v1/jobs/{matched_job}/heartbeat/",
        {"pilot_reference": "never-registered"},
        "D 403 403 403 403 403",
    ),
    # A job's sandbox: its pilot fetches its inputs (dave's job has none) and
    # uploads its outputs (multipart only: a JSON body is refused before anyone is asked);
    # those who see the job see its outputs and logs.
    (
        "api:job-input",
        "GET",
        "/api/v1/jobs/{matched_job}/input/data.txt?pilot_reference=p-1",
        None,
        "D 403 403 403 404 403",
    ),
    (
        "api:job-output",
        "POST",
        "/api/v1/jobs/{matched_job}/output/",
        {"pilot_reference": "p-1"},
        "D 415 415 415 415 415",
    ),
    ("api:job-sandbox", "GET", "/api/v1/jobs/{alice_job}/sandbox/", None, "D 200 404 404 404 200"),
    ("api:job-sandbox", "GET", "/api/v1/jobs/{carol_job}/sandbox/", None, "D 404 404 200 404 200"),
    (
        "api:job-sandbox-file",
        "GET",
        "/api/v1/jobs/{alice_job}/sandbox/std.out",
        None,
        "D 404 404 404 404 404",  # no output yet; others do not see the job at all
    ),
    ("api:job-log", "GET", "/api/v1/jobs/{alice_job}/log/", None, "D 200 404 404 404 200"),
    ("api:job-log", "GET", "/api/v1/jobs/{carol_job}/log/", None, "D 404 404 200 404 200"),
    # --- API: TaskQueues, matching, shares, pilots ------------------------------------------
    ("api:taskqueue-list", "GET", "/api/v1/task-queues/", None, A),
    ("api:taskqueue-export", "GET", "/api/v1/task-queues/export/", None, A),
    (
        "api:taskqueue-detail",
        "GET",
        "/api/v1/task-queues/{alice_tq}/",
        None,
        "D 200 404 404 404 200",
    ),
    (
        "api:taskqueue-detail",
        "GET",
        "/api/v1/task-queues/{carol_tq}/",
        None,
        "D 404 404 200 404 200",
    ),
    (
        "api:taskqueue-matching",
        "POST",
        "/api/v1/task-queues/matching/",
        {"site": "any", "cpu_time": 1000, "tag": []},
        STAFF_WRITE + " 200",
    ),
    (
        "api:match-list",
        "POST",
        "/api/v1/match/",
        {"site": "LCG.CERN.ch", "cpu_time": 10**6, "tag": [], "pilot_reference": "m-2"},
        # a user's credential is a private pilot of its own jobs (each has one waiting)
        "D 200 200 200 200 200",
    ),
    (
        "api:match-list",
        "POST",
        "/api/v1/match/",
        {"site": "LCG.CERN.ch", "cpu_time": 10**6, "tag": [], "owner_group": "lhcb_mc"},
        # only generic-pilot credentials and staff take another group's jobs
        "D 400 400 200 200 200",
    ),
    ("api:shares-list", "GET", "/api/v1/shares/", None, A),
    ("api:pilot-list", "GET", "/api/v1/pilots/", None, A),
    ("api:pilot-export", "GET", "/api/v1/pilots/export/", None, A),
    (
        "api:pilot-list",
        "POST",
        "/api/v1/pilots/",
        {"reference": "p-1", "site": "LCG.CERN.ch"},
        "D 201 201 201 200 201",
    ),  # another credential's identical reference: a pilot of the caller's own, no 403 leak
    (
        "api:pilot-list",
        "POST",
        "/api/v1/pilots/",
        {"reference": "p-2", "site": "LCG.CERN.ch", "ce": "ce07.pic.es"},
        "D 400 400 400 400 400",  # the CE is not at that site
    ),
    ("api:pilot-detail", "GET", "/api/v1/pilots/{pilot}/", None, "D 404 404 404 200 200"),
    # --- API: the monitoring summaries -------------------------------------------------------
    ("api:monitoring-job-summary-list", "GET", "/api/v1/monitoring/job-summary/", None, A),
    ("api:monitoring-held-back-list", "GET", "/api/v1/monitoring/held-back/", None, A),
    ("api:monitoring-pilot-summary-list", "GET", "/api/v1/monitoring/pilot-summary/", None, A),
    ("api:monitoring-errors-list", "GET", "/api/v1/monitoring/errors/?hours=1", None, A),
    (
        "api:monitoring-errors-list",
        "GET",
        "/api/v1/monitoring/errors/?hours=0",
        None,
        "D 400 400 400 400 400",
    ),
    (
        "api:pilot-status",
        "POST",
        "/api/v1/pilots/{pilot}/status/",
        {"status": "Running"},
        "D 404 404 404 200 200",
    ),
    ("api:pilot-log", "GET", "/api/v1/pilots/{pilot}/log/", None, "D 404 404 404 200 200"),
    (
        "api:pilot-log",
        "POST",
        "/api/v1/pilots/{pilot}/log/",
        {"lines": [{"message": "started"}]},
        "D 404 404 404 201 201",  # its own credential, and staff
    ),
    # --- API: sites, CEs, groups (staff write) ---------------------------------------------
    ("api:site-list", "GET", "/api/v1/sites/", None, A),
    ("api:site-list", "POST", "/api/v1/sites/", {}, STAFF_WRITE + " 400"),
    ("api:site-detail", "GET", "/api/v1/sites/{site}/", None, A),
    ("api:site-detail", "PATCH", "/api/v1/sites/{site}/", {}, STAFF_WRITE + " 200"),
    ("api:site-detail", "PUT", "/api/v1/sites/{site}/", {}, STAFF_WRITE + " 400"),
    ("api:site-detail", "DELETE", "/api/v1/sites/{site}/", None, STAFF_WRITE + " 409"),
    ("api:computingelement-list", "GET", "/api/v1/computing-elements/", None, A),
    ("api:computingelement-list", "POST", "/api/v1/computing-elements/", {}, STAFF_WRITE + " 400"),
    ("api:computingelement-detail", "GET", "/api/v1/computing-elements/{ce}/", None, A),
    (
        "api:computingelement-detail",
        "PATCH",
        "/api/v1/computing-elements/{ce}/",
        {},
        STAFF_WRITE + " 200",
    ),
    (
        "api:computingelement-detail",
        "DELETE",
        "/api/v1/computing-elements/{ce}/",
        None,
        STAFF_WRITE + " 204",
    ),
    ("api:gridgroup-list", "GET", "/api/v1/groups/", None, A),
    ("api:gridgroup-list", "POST", "/api/v1/groups/", {}, STAFF_WRITE + " 400"),
    ("api:gridgroup-detail", "GET", "/api/v1/groups/{lhcb_mc}/", None, A),
    (
        "api:gridgroup-detail",
        "PATCH",
        "/api/v1/groups/{lhcb_mc}/",
        {"job_share": 500},
        STAFF_WRITE + " 200",
    ),
    ("api:gridgroup-detail", "DELETE", "/api/v1/groups/{lhcb_mc}/", None, STAFF_WRITE + " 409"),
    ("api:gridgroup-changes", "GET", "/api/v1/groups/{lhcb_user}/changes/", None, A),
    # --- API: brokerage --------------------------------------------------------------------
    ("api:task-list", "GET", "/api/v1/tasks/", None, A),
    ("api:task-export", "GET", "/api/v1/tasks/export/", None, A),
    (
        "api:task-list",
        "POST",
        "/api/v1/tasks/",
        {"name": "t2", "n_jobs": 1, "owner_group": "lhcb_user", "kind": "analysis"},
        "D 201 201 400 400 201",  # erin and the pilot are not in lhcb_user
    ),
    (
        "api:task-list",
        "POST",
        "/api/v1/tasks/",
        {"name": "t4", "n_jobs": 1, "owner_group": "lhcb_user", "kind": "production"},
        # production tasks need a group with ProductionManagement: lhcb_user has none
        "D 400 400 400 400 400",
    ),
    (
        "api:task-list",
        "POST",
        "/api/v1/tasks/",
        {"name": "t5", "n_jobs": 1, "owner_group": "lhcb_mc"},
        "D 400 400 201 400 400",  # lhcb_mc is a production group; only erin is in it
    ),
    (
        "api:task-list",
        "POST",
        "/api/v1/tasks/",
        {"name": "t3", "n_jobs": 1, "owner_group": "lhcb_data"},
        # like a job or a job ad: only for a group the owner belongs to, staff included
        "D 400 400 400 400 400",
    ),
    *[
        (
            "api:task-list",
            "POST",
            "/api/v1/tasks/",
            {"name": "t6", "n_jobs": 1, "owner_group": "lhcb_user", "kind": "analysis", **staff},
            # fields that steer brokerage or fairness are set by staff (erin: not her group)
            "D 400 400 400 400 201",
        )
        for staff in ({"task_class": "S"}, {"gshare": "Matrix share"}, {"priority": 900})
    ],
    (
        "api:task-list",
        "POST",
        "/api/v1/tasks/",
        {"name": "t7", "n_jobs": 1, "owner_group": "lhcb_user", "kind": "analysis"}
        | {"parent": "{alice_task}"},
        "D 201 400 400 400 201",  # a parent: the caller's own task (staff: any)
    ),
    (
        "api:task-list",
        "POST",
        "/api/v1/tasks/",
        {"name": "t8", "n_jobs": 1, "owner_group": "lhcb_mc", "parent": "{alice_task}"},
        "D 400 400 400 400 400",  # erin's task may not name alice's: "no such task"
    ),
    ("api:task-detail", "GET", "/api/v1/tasks/{erin_task}/", None, "D 404 404 200 404 200"),
    ("api:task-detail", "GET", "/api/v1/tasks/{alice_task}/", None, "D 200 404 404 404 200"),
    (
        "api:task-outputs",
        "GET",
        "/api/v1/tasks/{erin_task}/outputs/",
        None,
        "D 404 404 200 404 200",
    ),
    ("api:task-kill", "POST", "/api/v1/tasks/{alice_task}/kill/", None, "D 200 404 404 404 200"),
    ("api:task-kill", "POST", "/api/v1/tasks/{erin_task}/kill/", None, "D 404 404 200 404 200"),
    # Not ended: nothing to retry (409) for those who may act on it.
    ("api:task-retry", "POST", "/api/v1/tasks/{alice_task}/retry/", None, "D 409 404 404 404 409"),
    (
        "api:task-detail",
        "PATCH",
        "/api/v1/tasks/{alice_task}/",
        {"task_class": "A"},
        STAFF_WRITE + " 200",
    ),
    (
        "api:task-brokerage",
        "GET",
        "/api/v1/tasks/{erin_task}/brokerage/",
        None,
        "D 404 404 200 404 200",
    ),
    ("api:brokeragerun-list", "GET", "/api/v1/brokerage-runs/", None, A),
    ("api:brokeragerun-export", "GET", "/api/v1/brokerage-runs/export/", None, A),
    (
        "api:brokeragerun-detail",
        "GET",
        "/api/v1/brokerage-runs/{erin_run}/",
        None,
        "D 404 404 200 404 200",
    ),
    ("api:nucleus-list", "GET", "/api/v1/nuclei/", None, A),
    ("api:nucleus-list", "POST", "/api/v1/nuclei/", {}, STAFF_WRITE + " 400"),
    ("api:nucleus-detail", "GET", "/api/v1/nuclei/{nucleus}/", None, A),
    ("api:nucleus-detail", "PATCH", "/api/v1/nuclei/{nucleus}/", {}, STAFF_WRITE + " 200"),
    ("api:nucleus-detail", "DELETE", "/api/v1/nuclei/{nucleus}/", None, STAFF_WRITE + " 409"),
    ("api:storage-list", "GET", "/api/v1/storages/", None, A),
    ("api:storage-list", "POST", "/api/v1/storages/", {}, STAFF_WRITE + " 400"),
    ("api:storage-detail", "GET", "/api/v1/storages/{storage}/", None, A),
    ("api:storage-detail", "PATCH", "/api/v1/storages/{storage}/", {}, STAFF_WRITE + " 200"),
    ("api:storage-detail", "DELETE", "/api/v1/storages/{storage}/", None, STAFF_WRITE + " 204"),
    ("api:pandaqueue-list", "GET", "/api/v1/panda-queues/", None, A),
    ("api:pandaqueue-list", "POST", "/api/v1/panda-queues/", {}, STAFF_WRITE + " 400"),
    ("api:pandaqueue-detail", "GET", "/api/v1/panda-queues/{panda_queue}/", None, A),
    (
        "api:pandaqueue-detail",
        "PATCH",
        "/api/v1/panda-queues/{panda_queue}/",
        {},
        STAFF_WRITE + " 200",
    ),
    (
        "api:pandaqueue-detail",
        "DELETE",
        "/api/v1/panda-queues/{panda_queue}/",
        None,
        STAFF_WRITE + " 204",
    ),
    ("api:networklink-list", "GET", "/api/v1/network-links/", None, A),
    ("api:networklink-list", "POST", "/api/v1/network-links/", {}, STAFF_WRITE + " 400"),
    ("api:networklink-detail", "GET", "/api/v1/network-links/{link}/", None, A),
    ("api:networklink-detail", "PATCH", "/api/v1/network-links/{link}/", {}, STAFF_WRITE + " 200"),
    (
        "api:networklink-detail",
        "DELETE",
        "/api/v1/network-links/{link}/",
        None,
        STAFF_WRITE + " 204",
    ),
    ("api:dataset-list", "GET", "/api/v1/datasets/", None, A),
    ("api:dataset-list", "POST", "/api/v1/datasets/", {}, "D 405 405 405 405 405"),
    ("api:dataset-detail", "GET", "/api/v1/datasets/{dataset}/", None, A),
    ("api:globalshare-list", "GET", "/api/v1/global-shares/", None, A),
    ("api:globalshare-list", "POST", "/api/v1/global-shares/", {}, STAFF_WRITE + " 400"),
    ("api:globalshare-detail", "GET", "/api/v1/global-shares/{global_share}/", None, A),
    (
        "api:globalshare-detail",
        "PATCH",
        "/api/v1/global-shares/{global_share}/",
        {},
        STAFF_WRITE + " 200",
    ),
    (
        "api:globalshare-detail",
        "DELETE",
        "/api/v1/global-shares/{global_share}/",
        None,
        STAFF_WRITE + " 204",
    ),
    ("api:userquota-list", "GET", "/api/v1/user-quotas/", None, STAFF_WRITE + " 200"),
    ("api:userquota-list", "POST", "/api/v1/user-quotas/", {}, STAFF_WRITE + " 400"),
    (
        "api:userquota-detail",
        "GET",
        "/api/v1/user-quotas/{user_quota}/",
        None,
        STAFF_WRITE + " 200",
    ),
    (
        "api:userquota-detail",
        "PATCH",
        "/api/v1/user-quotas/{user_quota}/",
        {},
        STAFF_WRITE + " 200",
    ),
    (
        "api:userquota-detail",
        "DELETE",
        "/api/v1/user-quotas/{user_quota}/",
        None,
        STAFF_WRITE + " 204",
    ),
    # --- API: ClassAds ---------------------------------------------------------------------
    ("api:sitead-list", "GET", "/api/v1/classads/sites/", None, A),
    ("api:sitead-export", "GET", "/api/v1/classads/sites/export/", None, A),
    ("api:sitead-list", "POST", "/api/v1/classads/sites/", "SITE_AD", STAFF_WRITE + " 200"),
    ("api:sitead-detail", "GET", "/api/v1/classads/sites/{site_ad}/", None, A),
    (
        "api:sitead-detail",
        "DELETE",
        "/api/v1/classads/sites/{site_ad}/",
        None,
        STAFF_WRITE + " 204",
    ),
    ("api:jobad-list", "GET", "/api/v1/classads/jobs/", None, A),
    ("api:jobad-export", "GET", "/api/v1/classads/jobs/export/", None, A),
    ("api:jobad-list", "POST", "/api/v1/classads/jobs/", {"ad": JOB_AD}, "D 201 201 201 201 201"),
    (
        "api:jobad-list",
        "POST",
        "/api/v1/classads/jobs/",
        {"ad": JOB_AD, "owner_group": "lhcb_data"},
        "D 400 400 400 400 400",
    ),
    (
        "api:jobad-detail",
        "GET",
        "/api/v1/classads/jobs/{carol_job_ad}/",
        None,
        "D 404 404 200 404 200",
    ),
    (
        "api:jobad-detail",
        "GET",
        "/api/v1/classads/jobs/{alice_job_ad}/",
        None,
        "D 200 404 404 404 200",
    ),
    (
        "api:jobad-analysis",
        "GET",
        "/api/v1/classads/jobs/{carol_job_ad}/analysis/",
        None,
        "D 404 404 200 404 200",
    ),
    (
        "api:jobad-release",
        "POST",
        "/api/v1/classads/jobs/{carol_job_ad}/release/",
        None,
        "D 404 404 409 404 409",
    ),  # allowed, but the ad is not held
    (
        "api:jobad-remove",
        "POST",
        "/api/v1/classads/jobs/{alice_job_ad}/remove/",
        None,
        "D 200 404 404 404 200",
    ),
    (
        "api:jobad-remove",
        "POST",
        "/api/v1/classads/jobs/{carol_job_ad}/remove/",
        None,
        "D 404 404 200 404 200",
    ),
    # --- API: live parameters and cycles -----------------------------------------------------
    ("api:parameter-list", "GET", "/api/v1/config/", None, A),
    ("api:parameter-detail", "GET", f"/api/v1/config/{PARAM}/", None, A),
    (
        "api:parameter-detail",
        "PATCH",
        f"/api/v1/config/{PARAM}/",
        {"value": 900},
        STAFF_WRITE + " 200",
    ),
    ("api:parameter-history", "GET", f"/api/v1/config/{PARAM}/history/", None, A),
    # --- API: notices when work ends (each user's own only, staff included) ----------------
    ("api:notificationrequest-list", "GET", "/api/v1/notifications/", None, A),
    (
        "api:notificationrequest-list",
        "POST",
        "/api/v1/notifications/",
        {"job": "{alice_job}"},
        "D 201 400 400 400 201",  # a job one cannot see is "no job N that you can see"
    ),
    (
        "api:notificationrequest-detail",
        "GET",
        "/api/v1/notifications/{alice_notify}/",
        None,
        "D 200 404 404 404 404",
    ),
    (
        "api:notificationrequest-detail",
        "PATCH",
        "/api/v1/notifications/{alice_notify}/",
        {"outcomes": "failed"},
        "D 200 404 404 404 404",
    ),
    (
        "api:notificationrequest-detail",
        "DELETE",
        "/api/v1/notifications/{alice_notify}/",
        None,
        "D 204 404 404 404 404",
    ),
    ("api:notificationrequest-preferences", "GET", "/api/v1/notifications/preferences/", None, A),
    (
        "api:notificationrequest-preferences",
        "PATCH",
        "/api/v1/notifications/preferences/",
        {"email": True},
        "D 200 200 200 200 200",
    ),
    ("api:notificationrequest-sent", "GET", "/api/v1/notifications/sent/", None, A),
    ("api:cyclerun-list", "GET", "/api/v1/cycles/", None, A),
    ("api:timeoutaction-list", "GET", "/api/v1/timeout-actions/", None, A),
    ("api:timeoutaction-export", "GET", "/api/v1/timeout-actions/export/", None, A),
    (
        "api:timeoutaction-detail",
        "GET",
        "/api/v1/timeout-actions/999999/",
        None,
        "D 404 404 404 404 404",
    ),
    ("api:cyclerun-export", "GET", "/api/v1/cycles/export/", None, A),
    ("api:cyclerun-detail", "GET", "/api/v1/cycles/{cycle_run}/", None, A),
    # --- DiracX's API (api/diracx/): discovery answers anyone, the rest every signed-in user
    # about the jobs it may see (tests/test_diracx_*.py); asked here without a body ---------
    ("diracx-openid-configuration", "GET", "/.well-known/openid-configuration", None, "200 " * 6),
    ("diracx-userinfo", "GET", "/api/auth/userinfo", None, "401" + " 200" * 5),
    ("diracx-search", "POST", "/api/jobs/search", None, "401" + " 200" * 5),
    ("diracx-summary", "POST", "/api/jobs/summary", None, "401" + " 400" * 5),
    ("diracx-submit-jdl", "POST", "/api/jobs/jdl", None, "401" + " 400" * 5),
    ("diracx-status", "PATCH", "/api/jobs/status", None, "401" + " 400" * 5),
    # --- pages outside the login wall --------------------------------------------------------
    ("login", "GET", "/login/", None, "200 200 200 200 200 200"),
    ("logout", "POST", "/logout/", None, "D D D D D D"),  # signed out: the login page
    ("favicon.ico", "GET", "/favicon.ico", None, "301 301 301 301 301 301"),
    # Health answers anyone (load balancers): 503 here, no worker cluster runs the cycles.
    ("healthz", "GET", "/healthz", None, "503 503 503 503 503 503"),
    # Metrics: staff, or an address in METRICS_ALLOWED_ADDRESSES (none in the tests).
    ("metrics", "GET", "/metrics", None, "401 403 403 403 403 200"),
    # The API's description and its viewers answer anyone: a generated client reads the
    # schema before it has a token (the API itself still answers 401).
    ("schema", "GET", "/api/schema/", None, "200 200 200 200 200 200"),
    ("swagger-ui", "GET", "/api/docs/", None, "200 200 200 200 200 200"),
    ("redoc", "GET", "/api/redoc/", None, "200 200 200 200 200 200"),
    # The admin keeps its own login: everyone but staff is sent there.
    ("admin:index", "GET", "/admin/", None, "R R R R R 200"),
    # --- pages: jobs, TaskQueues, pilots ----------------------------------------------------
    ("home", "GET", "/", None, A),
    ("job-list", "GET", "/jobs/", None, A),
    ("job-submit", "GET", "/jobs/submit/", None, A),
    ("job-submit", "POST", "/jobs/submit/", {"jdl": "[ CPUTime = 1000; ]"}, "D R R R R R"),
    ("job-detail", "GET", "/jobs/{alice_job}/", None, "D 200 404 404 404 200"),
    ("job-detail", "GET", "/jobs/{carol_job}/", None, "D 404 404 200 404 200"),
    # Destructive actions ask first (200: the page asking) and act on a yes.
    ("job-kill", "POST", "/jobs/{alice_job}/kill/", {}, "D 200 404 404 404 200"),
    ("job-kill", "POST", "/jobs/{alice_job}/kill/", {"confirm": "yes"}, "D R 404 404 404 R"),
    ("job-kill", "POST", "/jobs/{carol_job}/kill/", {"confirm": "yes"}, "D 404 404 R 404 R"),
    ("job-kill", "GET", "/jobs/{alice_job}/kill/", None, "D 405 405 405 405 405"),
    ("job-reschedule", "POST", "/jobs/{alice_job}/reschedule/", None, "D R 404 404 404 R"),
    ("job-reschedule", "POST", "/jobs/{matched_job}/reschedule/", None, "D 404 404 404 404 R"),
    ("taskqueue-list", "GET", "/taskqueues/", None, A),
    ("taskqueue-detail", "GET", "/taskqueues/{alice_tq}/", None, "D 200 404 404 404 200"),
    ("taskqueue-detail", "GET", "/taskqueues/{carol_tq}/", None, "D 404 404 200 404 200"),
    ("match-resource", "GET", "/taskqueues/match/", None, STAFF_WRITE + " 200"),
    ("site-list", "GET", "/sites/", None, A),
    ("site-detail", "GET", "/sites/{site}/", None, A),
    # everyone reads the site mask and its history; staff change it (tests/test_operator_tools)
    ("site-mask", "GET", "/sites/mask/", None, A),
    ("site-mask", "POST", "/sites/mask/", {"action": "ban", "reason": "x"}, STAFF_WRITE + " 400"),
    # the quick search goes to what the subject may see, else says nothing was found
    ("quick-search", "GET", "/search/?q=alice", None, "D R 200 200 200 R"),
    ("pilot-list", "GET", "/pilots/", None, A),
    ("pilot-detail", "GET", "/pilots/{pilot}/", None, "D 404 404 404 200 200"),
    ("director", "GET", "/pilots/director/", None, A),
    # the summaries count only what each subject may see (web/monitoring/tests)
    ("monitoring:index", "GET", "/monitoring/", None, "D R R R R R"),
    ("monitoring:job-summary", "GET", "/monitoring/jobs/", None, A),
    ("monitoring:held-back", "GET", "/monitoring/held/", None, A),
    ("monitoring:pilot-summary", "GET", "/monitoring/pilots/", None, A),
    ("monitoring:error-summary", "GET", "/monitoring/errors/?hours=168", None, A),
    (
        "monitoring:error-summary",
        "GET",
        "/monitoring/errors/?hours=x",
        None,
        "D 400 400 400 400 400",
    ),
    # --- pages: shares, parameters, cycles ---------------------------------------------------
    ("group-list", "GET", "/shares/", None, A),
    # bulk kill / reschedule: each job checked on its own (another's is refused by name)
    ("job-bulk", "POST", "/jobs/bulk/", {"action": "kill", "job": "1"}, "D 200 200 200 200 200"),
    (
        "api:job-bulk",
        "POST",
        "/api/v1/jobs/bulk/",
        {"action": "kill", "ids": [1]},
        "D 200 200 200 200 200",
    ),
    # accounting: aggregates of the whole grid, as the Shares page's
    ("accounting", "GET", "/accounting/", None, A),
    ("api:accounting-list", "GET", "/api/v1/accounting/", None, A),
    # a user's page: their own, or staff's
    ("user-detail", "GET", "/shares/users/alice/", None, "D 200 404 404 404 200"),
    (
        "group-edit",
        "POST",
        "/shares/groups/{lhcb_mc}/",
        # the Shares page's own form: each group's fields carry its prefix
        {"g{lhcb_mc}-job_share": "400", "g{lhcb_mc}-job_sharing": "on", "g{lhcb_mc}-comment": "m"},
        STAFF_WRITE + " R",
    ),
    (
        "group-change-revert",
        "POST",
        "/shares/changes/{group_change}/revert/",
        {},
        STAFF_WRITE + " 200",
    ),
    (
        "group-change-revert",
        "POST",
        "/shares/changes/{group_change}/revert/",
        {"confirm": "yes"},
        STAFF_WRITE + " R",
    ),
    ("parameters", "GET", "/config/", None, STAFF_WRITE + " 200"),
    (
        "parameters",
        "POST",
        "/config/",
        {"name": PARAM, f"{PARAM}-value": "901", f"{PARAM}-comment": "matrix"},
        STAFF_WRITE + " R",
    ),
    (
        "parameter-rollback",
        "POST",
        f"/config/{PARAM}/rollback/{{param_version}}/",
        {},
        STAFF_WRITE + " 200",
    ),
    (
        "parameter-rollback",
        "POST",
        f"/config/{PARAM}/rollback/{{param_version}}/",
        {"confirm": "yes"},
        STAFF_WRITE + " R",
    ),
    ("parameter-reset", "POST", f"/config/{PARAM}/reset/", {}, STAFF_WRITE + " 200"),
    ("parameter-reset", "POST", f"/config/{PARAM}/reset/", {"confirm": "yes"}, STAFF_WRITE + " R"),
    ("cycle-runs", "GET", "/config/cycles/", None, A),
    # --- pages: notifications (each user's own) ----------------------------------------------
    ("notifications", "GET", "/notifications/", None, A),
    (
        "notifications",
        "POST",
        "/notifications/",
        {"action": "preference", "pref-outcomes": "failed"},
        "D R R R R R",
    ),
    # --- pages: brokerage ------------------------------------------------------------------
    ("task-list", "GET", "/brokerage/tasks/", None, A),
    ("decision-list", "GET", "/brokerage/decisions/", None, A),
    ("task-submit", "GET", "/brokerage/tasks/submit/", None, A),
    (
        "task-submit",
        "POST",
        "/brokerage/tasks/submit/",
        {"kind": "production", "owner_group": "lhcb_user", **TASK_FORM},
        "D 200 200 200 200 200",  # the form again, naming ProductionManagement (or the group)
    ),
    (
        "task-submit",
        "POST",
        "/brokerage/tasks/submit/",
        {"kind": "production", "owner_group": "lhcb_mc", **TASK_FORM},
        "D 200 200 R 200 200",  # only erin is in lhcb_mc, a production group
    ),
    (
        "task-submit",
        "POST",
        "/brokerage/tasks/submit/",
        {"kind": "analysis", "owner_group": "lhcb_user", **TASK_FORM},
        "D R R 200 200 R",  # analysis tasks are open to every member of the group
    ),
    ("task-detail", "GET", "/brokerage/tasks/{erin_task}/", None, "D 404 404 200 404 200"),
    ("task-detail", "GET", "/brokerage/tasks/{alice_task}/", None, "D 200 404 404 404 200"),
    ("task-kill", "POST", "/brokerage/tasks/{alice_task}/kill/", {}, "D 200 404 404 404 200"),
    (
        "task-kill",
        "POST",
        "/brokerage/tasks/{erin_task}/kill/",
        {"confirm": "yes"},
        "D 404 404 R 404 R",
    ),
    ("task-retry", "POST", "/brokerage/tasks/{alice_task}/retry/", None, "D R 404 404 404 R"),
    ("queue-weights", "GET", "/brokerage/queues/", None, A),
    ("nucleus-list", "GET", "/brokerage/nuclei/", None, A),
    ("nucleus-detail", "GET", "/brokerage/nuclei/{nucleus}/", None, A),
    ("analysis-user", "GET", "/brokerage/analysis/", None, A),
    ("timeouts", "GET", "/brokerage/timeouts/", None, A),
    ("timeout-actions", "GET", "/brokerage/timeouts/actions/", None, A),
    # --- pages: ClassAds -------------------------------------------------------------------
    ("classads:site-ad-list", "GET", "/classads/", None, A),
    ("classads:site-ad-detail", "GET", "/classads/sites/{site_ad}/", None, A),
    ("classads:job-ad-list", "GET", "/classads/jobs/", None, A),
    (
        "classads:job-ad-detail",
        "GET",
        "/classads/jobs/{carol_job_ad}/",
        None,
        "D 404 404 200 404 200",
    ),
    (
        "classads:job-ad-detail",
        "GET",
        "/classads/jobs/{alice_job_ad}/",
        None,
        "D 200 404 404 404 200",
    ),
    (
        "classads:job-ad-release",
        "POST",
        "/classads/jobs/{carol_job_ad}/release/",
        None,
        "D 404 404 R 404 R",
    ),
    (
        "classads:job-ad-remove",
        "POST",
        "/classads/jobs/{alice_job_ad}/remove/",
        None,
        "D R 404 404 404 R",
    ),
    ("classads:negotiation", "GET", "/classads/negotiation/", None, A),
    # --- pages: the simulated grid ------------------------------------------------------------
    ("simulation-clock", "GET", "/simulation/", None, A),
    (
        "simulation-clock-action",
        "POST",
        "/simulation/clock/",
        {"action": "pause"},
        STAFF_WRITE + " 200",
    ),
    (
        "simulation-clock-action",
        "POST",
        "/simulation/clock/",
        {"action": "pause", "confirm": "yes"},
        STAFF_WRITE + " R",
    ),
    (
        "simulation-clock-action",
        "POST",
        "/simulation/clock/",
        {"action": "resume"},
        STAFF_WRITE + " R",
    ),
]


# --- the shared world -----------------------------------------------------------------------


def _build() -> dict:
    from brokerage.models import (
        BrokerageRun,
        Dataset,
        GlobalShare,
        NetworkLink,
        Nucleus,
        PandaQueue,
        Storage,
        UserQuota,
    )
    from core import gdpconfig
    from core.models import ParameterValue
    from matcher.models import ComputingElement, Job, Site
    from shares.models import GridGroup, GroupChange

    state = build_demo()
    users = state["users"]
    ids = populate(users)
    ids["alice_tq"] = Job.objects.get(pk=ids["alice_job"]).task_queue_id
    ids["carol_tq"] = Job.objects.get(pk=ids["carol_job"]).task_queue_id
    ids["erin_run"] = BrokerageRun.objects.filter(task_id=ids["erin_task"]).first().pk
    ids["site"] = Site.objects.get(name="LCG.CERN.ch").pk
    ids["ce"] = ComputingElement.objects.order_by("id").first().pk
    ids["lhcb_mc"] = GridGroup.objects.get(name="lhcb_mc").pk
    ids["lhcb_user"] = GridGroup.objects.get(name="lhcb_user").pk
    ids["group_change"] = GroupChange.objects.filter(group_id=ids["lhcb_user"]).first().pk
    ids["nucleus"] = Nucleus.objects.order_by("id").first().pk
    ids["storage"] = Storage.objects.order_by("id").first().pk
    ids["panda_queue"] = PandaQueue.objects.order_by("id").first().pk
    ids["link"] = NetworkLink.objects.order_by("id").first().pk
    ids["dataset"] = (
        Dataset.objects.order_by("id").first() or Dataset.objects.create(name="matrix.ds")
    ).pk
    ids["global_share"] = GlobalShare.objects.create(name="Matrix share", target_pct=1.0).pk
    ids["user_quota"] = UserQuota.objects.create(user=users["bob"], disk_quota_gb=10.0).pk
    gdpconfig.set_value(PARAM, 1200, users["admin"], "matrix: a version to roll back to")
    gdpconfig.set_value(PARAM, 1300, users["admin"], "matrix")
    ids["param_version"] = ParameterValue.objects.filter(name=PARAM).order_by("version")[0].version
    from rest_framework.authtoken.models import Token

    from notifications.services import create_request

    ids["alice_notify"] = create_request(
        users["alice"], {"task_id": ids["alice_task"], "channels": ["email"]}
    ).pk
    state["tokens"] = dict(Token.objects.values_list("user__username", "key"))
    state["ids"] = ids
    return state


@pytest.fixture(scope="module")
def matrix_world(django_db_setup, django_db_blocker):
    with shared_state(django_db_blocker, _build) as state:
        yield state


def _site_ad() -> dict:
    from classads import semantics

    return {"ad": semantics.SEED_SITE_AD}


def _request(state, subject, method, url, body):
    users, tokens = state["users"], state["tokens"]
    if url.startswith("/api/v1/"):
        client = APIClient()
        if subject != "anonymous":
            client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[subject]}")
        kwargs = {"format": "json"} if body is not None else {}
        return getattr(client, method.lower())(url, body, **kwargs)
    client = Client(HTTP_ACCEPT=BROWSER_ACCEPT)  # pages are asked for by a browser
    if subject != "anonymous":
        client.force_login(users[subject])
    if method == "GET":
        return client.get(url)
    return client.generic(method, url) if body is None else client.post(url, body)


def _matches(token: str, response, api: bool, url: str = "") -> bool:
    status = response.status_code
    if token == "D":
        if api:
            return status == 401 and response.get("WWW-Authenticate") == "Token"
        # A signed-in visitor signing out lands on the login page itself; otherwise the login
        # page comes back to the page asked for.
        back = {f"/login/?next={quote(url)}"} | ({"/login/"} if url == "/logout/" else set())
        return status == 302 and response["Location"] in back
    if token == "R":
        return status == 302 and not response["Location"].startswith("/login/")
    return status in {int(t) for t in token.split("|")}


def _key(route: str, name: str | None, namespace: str) -> str:
    if route.startswith("api/v1/"):
        return f"api:{name}"
    return f"{namespace}{name}" if name else route


def _walk(patterns, prefix="", namespace=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = namespace + (f"{p.namespace}:" if p.namespace else "")
            yield from _walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.name, namespace


def _routes() -> set[str]:
    keys = set()
    for route, name, namespace in _walk(get_resolver().url_patterns):
        if "(?P<format>" in route or namespace.startswith("admin:"):
            continue  # format-suffix twins of API routes; the admin's own views (index below)
        keys.add(_key(route, name, namespace))
    return keys


def _cases():
    for key, method, url, body, expected in ROWS:
        tokens = expected.split()
        assert len(tokens) == len(SUBJECTS), (key, method, url)
        for subject, token in zip(SUBJECTS, tokens, strict=True):
            yield pytest.param(
                key, method, url, body, subject, token, id=f"{subject}-{method} {url}"
            )


def test_every_route_has_an_expectation_for_every_subject():
    covered = {key for key, *_ in ROWS}
    missing = _routes() - covered - {"admin:index"}
    assert not missing, f"routes with no row in the permissions matrix: {sorted(missing)}"
    assert not covered - _routes() - {"admin:index"}, "rows for routes that do not exist"


@pytest.mark.parametrize(("key", "method", "url", "body", "subject", "token"), list(_cases()))
def test_the_subject_gets_what_the_design_allows(
    matrix_world, db, key, method, url, body, subject, token
):
    url = url.format(**matrix_world["ids"])
    match = resolve(url.split("?")[0])
    namespace = ":".join(match.namespaces) + ":" if match.namespaces else ""
    assert _key(match.route, match.url_name, namespace) == key, (url, match.route)
    if body == "SITE_AD":
        body = _site_ad()
    if isinstance(body, dict):
        body = {k.format(**matrix_world["ids"]): v for k, v in body.items()}
        for k, v in body.items():  # an object's id by name: "{alice_task}"
            if isinstance(v, str) and v.startswith("{") and v.strip("{}") in matrix_world["ids"]:
                body[k] = matrix_world["ids"][v.strip("{}")]
    response = _request(matrix_world, subject, method, url, body)
    assert _matches(token, response, url.startswith("/api/v1/"), url), (
        subject,
        method,
        url,
        token,
        response.status_code,
        response.get("Location"),
        getattr(response, "data", None) or response.content[:300],
    )


# --- what each subject sees in the lists ------------------------------------------------------

VISIBLE = {
    # the objects of the shared world each subject finds in the list (among the named ones)
    "/api/v1/jobs/": {
        "alice": {"alice_job"},
        "bob": {"bob_job"},
        "erin": {"carol_job"},
        "pilot": set(),
        "admin": {"alice_job", "bob_job", "carol_job", "carol_user_job", "dave_job", "admin_job"},
    },
    "/api/v1/tasks/": {
        "alice": {"alice_task"},
        "bob": set(),
        "erin": {"erin_task"},
        "pilot": set(),
        "admin": {"alice_task", "erin_task"},
    },
    "/api/v1/classads/jobs/": {
        "alice": {"alice_job_ad"},
        "bob": set(),
        "erin": {"carol_job_ad"},
        "pilot": set(),
        "admin": {"alice_job_ad", "carol_job_ad"},
    },
    "/api/v1/pilots/": {
        "alice": set(),
        "bob": set(),
        "erin": set(),
        "pilot": {"pilot"},
        "admin": {"pilot"},
    },
    "/api/v1/task-queues/": {
        "alice": {"alice_tq"},
        "bob": set(),
        "erin": {"carol_tq"},
        "pilot": set(),
        "admin": {"alice_tq", "carol_tq"},
    },
}


@pytest.mark.parametrize("subject", SUBJECTS[1:])
@pytest.mark.parametrize("url", sorted(VISIBLE))
def test_a_list_shows_the_subject_exactly_what_it_may_see(matrix_world, db, url, subject):
    ids = matrix_world["ids"]
    names = {ids[n]: n for n in {n for s in VISIBLE[url].values() for n in s}}
    response = _request(matrix_world, subject, "GET", url, None)
    assert response.status_code == 200
    shown = {row["id"] for row in response.data["results"]}
    assert {names[i] for i in shown if i in names} == VISIBLE[url][subject]


@pytest.mark.parametrize("subject", ["alice", "bob", "erin"])
def test_a_users_credential_matching_as_a_pilot_gets_only_jobs_it_may_act_on(
    matrix_world, db, subject
):
    """A private pilot of a user takes the user's jobs and, as in DIRAC, those of its
    JobSharing groups (erin's takes carol's lhcb_mc job), never anyone else's."""
    from matcher.models import Job

    body = {"site": "LCG.CERN.ch", "cpu_time": 10**6, "tag": [], "pilot_reference": "own"}
    user = matrix_world["users"][subject]
    waiting = Job.objects.filter(status="activated")
    assert waiting.exclude(owner=user).exists()  # others' jobs are there to be taken
    taken = []
    for _ in range(waiting.count() + 1):
        response = _request(matrix_world, subject, "POST", "/api/v1/match/", body)
        if response.status_code == 204:
            break
        assert response.status_code == 200
        taken.append(response.data["id"])
    assert taken, "the user's waiting job was not given to its own pilot"
    sharing = set(user.visible_group_ids())
    for owner, group in Job.objects.filter(pk__in=taken).values_list("owner", "owner_group"):
        assert owner == user.pk or group in sharing, (subject, owner, group)
