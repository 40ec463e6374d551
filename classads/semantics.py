"""HTCondor's ClassAd library with the negotiator's semantics (docs/developer-guide.md, Condor-G
ClassAd matchmaking).

`classad2` alone scopes strictly: an unscoped name is looked up only in its own ad. The
negotiator falls back to the other ad (TARGET) and knows HTCondor's extra functions
(stringListMember, split...). Importing `htcondor2` switches both on, for the whole process;
a host configuration with STRICT_CLASSAD_EVALUATION would switch the fallback off again, so
the start-up self-test evaluates the seed's USCMS pair, whose job refers unscoped to
`Is_USCMS_Site`, an attribute only the site has, and refuses to start if it does not match.
"""

from __future__ import annotations

import logging
import os

from django.core.exceptions import ImproperlyConfigured

log = logging.getLogger(__name__)

# The seed's USCMS site ad, in the old syntax condor_advertise reads.
SEED_SITE_AD = """\
MyType = "Machine"
TargetType = "Job"
Name = "uw-hep-USCMS-Site"
StartdIpAddr = "<127.0.0.1:1234>"
UpdateSequenceNumber = 1057960761
Rank = 0.000000
CurrentRank = 0.000000
WantAdRevaluate = True
CurMatches = 0
MaxMatches = 2
Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)
Is_USCMS_Site = True
MatchmakerURL = "ramen.fnal.gov:/jobmanager-condor"
SiteEnvironment = "SiteGatekeeperURL=dill.hep.wisc.edu:/jobmanager-condor;\
SiteVDTLocation=/dpe;SiteWorkingArea=/scratch/work;SiteExportDir=/scratch/export"
MOP_SITE="uw-hep"
"""

# The matchmaking lines of the seed's modified DAG submit file (the job side of the pair).
SEED_JOB_AD = """\
[
  WANT_USCMS_MATCHMAKER = true;
  Requirements = Is_USCMS_Site =?= true;
  Rank = -CurMatches/MaxMatches
]"""

_enabled = False


def enable() -> None:
    """Import htcondor2 once: old-ClassAd scoping and HTCondor's function library."""
    global _enabled
    if _enabled:
        return
    # Without a configuration file htcondor2 would look for one in the usual places; /dev/null
    # keeps a stray host condor_config (say, one setting STRICT_CLASSAD_EVALUATION) out.
    os.environ.setdefault("CONDOR_CONFIG", "/dev/null")
    import htcondor2  # noqa: F401  (side effect: negotiator semantics for the whole process)

    _enabled = True


def negotiator_semantics() -> bool:
    """True when the seed's USCMS job and site ads match, which needs the fallback of unscoped
    names to TARGET (the job's `Is_USCMS_Site`) and HTCondor's functions."""
    import classad2

    site = classad2.ClassAd(
        "[Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE);"
        " CurMatches = 0; MaxMatches = 2; Is_USCMS_Site = true]"
    )
    job = classad2.ClassAd(SEED_JOB_AD)
    functions = classad2.ExprTree('stringListMember("b", "a,b,c")').eval()
    return job.symmetricMatch(site) is True and functions is True


def self_test() -> None:
    if not negotiator_semantics():
        log.critical(
            "ClassAd evaluation is strict: the seed's USCMS job and site ads do not match. "
            "Is STRICT_CLASSAD_EVALUATION set in the environment or a condor_config?"
        )
        raise ImproperlyConfigured(
            "ClassAd negotiator semantics are off (STRICT_CLASSAD_EVALUATION?): refusing to start"
        )
