"""The simulated grid's live parameters: how much work arrives, how often pilots go silent, how
the simulated CEs treat their pilots."""

from core.gdpconfig import FLOAT, INT, JSON, Param, register
from core.gdpconfig_shapes import Number, Obj


def _reg(name, kind, default, help, **kw):
    return register(
        Param(name=name, kind=kind, default=default, help=help, category="simulation", **kw)
    )


_reg(
    "SimJobsPerMinute",
    FLOAT,
    6.0,
    "DIRAC jobs arriving per simulated minute.",
    minimum=0,
    maximum=10_000,
)
_reg(
    "SimProductionTasksPerHour",
    FLOAT,
    2.0,
    "Production tasks per simulated hour.",
    minimum=0,
    maximum=10_000,
)
_reg(
    "SimAnalysisTasksPerHour",
    FLOAT,
    2.0,
    "Analysis tasks per simulated hour.",
    minimum=0,
    maximum=10_000,
)
_reg(
    "SimJobAdsPerHour", FLOAT, 3.0, "ClassAd job ads per simulated hour.", minimum=0, maximum=10_000
)
_reg(
    "SimSilentPilotsPerHour",
    FLOAT,
    2.0,
    "Running pilots that go silent per simulated hour (their jobs then time out).",
    minimum=0,
    maximum=10_000,
)
_reg(
    "SimMaxWaitingJobs",
    INT,
    4000,
    "No new work arrives while more jobs than this wait.",
    minimum=0,
    maximum=10**7,
)
_reg(
    "SimMaxWaitingJobsPerUser",
    INT,
    250,
    "A user with this many jobs waiting submits no more; the arrivals go to the others.",
    minimum=0,
    maximum=10**7,
)
_reg(
    "SimTickSeconds",
    FLOAT,
    5.0,
    "Real seconds between two simulator ticks.",
    minimum=0.5,
    maximum=3600,
)
_reg(
    "SimMaxSpeed",
    FLOAT,
    3600.0,
    "The fastest the simulated clock may run (simulated seconds per real second).",
    minimum=1,
    maximum=86400,  # a simulated day per second: now() stays a datetime for years
)
_reg(
    "SimulatedPilotSeconds",
    JSON,
    {"Submitted": 30, "Scheduled": 60, "Aborted": 0.05, "JobFailed": 0.05, "CPUScale": 0.01},
    "The simulated CE: seconds in Submitted and Scheduled, the chance a pilot aborts and a "
    "job fails, and job run time = CPUTime x CPUScale seconds.",
    shape=Obj(
        {
            "Submitted": Number(0, 86400),
            "Scheduled": Number(0, 86400),
            "Aborted": Number(0, 1),
            "JobFailed": Number(0, 1),
            # run time = CPUTime x CPUScale: at most 10 x a year stays a datetime
            "CPUScale": Number(0, 10),
        }
    ),
)
