"""Fixtures of the ClassAd tests: the seed's site ad and DAG submit file, advertising and
submitting through the API."""

import pytest

from classads import semantics

# The seed's modified DAG submit file (Condor-G matchmaking as USCMS ran it), verbatim.
SEED_DAG_SUBMIT = """\
universe = globus
+WANT_USCMS_MATCHMAKER = True
Requirements = Is_USCMS_Site =?= True
Rank = -CurMatches/MaxMatches
environment = $$(SiteEnvironment);PATH=$ENV(PATH);USER=$ENV(USER);\
_CONDOR_DAGMAN_LOG=/dpe/.../group.dag.dagman.out;_CONDOR_MAX_DAGMAN_LOG=0
executable = /condor/bin/condor_dagman
transfer_executable = false
arguments = -f -l . -Debug 3 -Lockfile group.dag.lock -Dag group.dag -Rescue group.dag.rescue \
-Condorlog /dpe/.../group.log
remote_initialdir = /dpe/...
GlobusScheduler = $$(MatchmakerURL)
output = group.dag.lib.out
error = group.dag.lib.out
log = group.dag.dagman.log
notification = never
GlobusRSL = (condor_submit=(universe scheduler)(remove_kill_sig SIGUSR1))
queue
"""

# The seed's generic DAG node: everything about the site comes from $ENV().
SEED_NODE_SUBMIT = """\
GlobusScheduler = $ENV(SiteGatekeeperURL)
Remote_Initialdir = $ENV(SiteWorkingArea)
Environment = SiteVDTLocation=$ENV(SiteVDTLocation);SiteExportDir=$ENV(SiteExportDir)
"""

SEED_NODES = [
    {"name": "stage-in", "cpu_time": 600, "submit": SEED_NODE_SUBMIT},
    {"name": "run", "cpu_time": 3600, "submit": SEED_NODE_SUBMIT},
    {"name": "stage-out", "cpu_time": 600, "submit": SEED_NODE_SUBMIT},
    {"name": "cleanup", "cpu_time": 60, "submit": SEED_NODE_SUBMIT},
]


@pytest.fixture
def advertise(users, api):
    """advertise(text, user="admin", **body) -> the response."""

    def make(text, user="admin", **body):
        return api(users[user]).post("/api/v1/classads/sites/", {"ad": text, **body}, format="json")

    return make


@pytest.fixture
def seed_site(advertise):
    response = advertise(semantics.SEED_SITE_AD)
    assert response.status_code == 201, response.data
    return response.data["site_ad"]


@pytest.fixture
def submit_ad(users, api):
    """submit_ad(ad, user="carol", **body) -> the response."""

    def make(ad, user="carol", **body):
        body.setdefault("owner_group", "lhcb_mc")
        return api(users[user]).post("/api/v1/classads/jobs/", {"ad": ad, **body}, format="json")

    return make


def site_ad_text(name, *, seq=1, cur=0, max_matches=2, rank="0.0", extra="", revaluate=True):
    """A USCMS-style site ad in the old syntax."""
    return (
        f'Name = "{name}"\n'
        f"UpdateSequenceNumber = {seq}\n"
        f"WantAdRevaluate = {'True' if revaluate else 'False'}\n"
        f"CurMatches = {cur}\n"
        f"MaxMatches = {max_matches}\n"
        f"Rank = {rank}\n"
        "Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)\n"
        "Is_USCMS_Site = True\n"
        f'MatchmakerURL = "{name}.example.org:/jobmanager-condor"\n'
        f'SiteEnvironment = "SiteGatekeeperURL={name}.example.org"\n'
        f'GridSite = "{name}"\n'
        f"{extra}"
    )
