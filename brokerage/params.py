"""The brokerage's gdpconfig keys, with PanDA's names and PanDA's defaults."""

from core.gdpconfig import BOOL, FLOAT, INT, JSON, Param, register
from core.gdpconfig_shapes import ListOf, Obj, Text

# A CRIC software dictionary (PandaQueue.software): for ALL only the tags are read (a container
# name resolved through their sources), the rest is refused unless CRIC publishes it.
_NAMES = ListOf(Text(255), max_items=1000)
SOFTWARE = Obj(
    {
        "cmtconfigs": _NAMES,
        "containers": _NAMES,
        "cvmfs": _NAMES,
        "architectures": ListOf(
            Obj(
                {
                    "type": Text(16),
                    "arch": _NAMES,
                    "instr": _NAMES,
                    "vendor": _NAMES,
                    "model": _NAMES,
                }
            )
        ),
        "tags": ListOf(
            Obj(
                {
                    "cmtconfig": Text(255),
                    "container_name": Text(255),  # Task.container_name
                    "project": Text(255),
                    "release": Text(255),
                    "sources": _NAMES,
                    "tag": Text(255),
                }
            ),
            max_items=5000,
        ),
    }
)


def _reg(name, kind, default, help, category="brokerage: tasks", **kw):
    return register(
        Param(name=name, kind=kind, default=default, help=help, category=category, **kw)
    )


# Every number is bounded (gdpconfig.register): ceilings far above any real setting and below
# what overflows a timedelta, a datetime or a PostgreSQL integer it is compared with.
_SIZE = {"minimum": 0, "maximum": 1e9}  # TB, GB, kB/s, queue lengths
_COUNT = {"minimum": 0, "maximum": 10**9}  # files, jobs, cores
_RATIO = {"minimum": 0, "maximum": 1e6}
_FRACTION = {"minimum": 0, "maximum": 1}
_HOURS = {"minimum": 0, "maximum": 10 * 366 * 24}  # ten years
_DISKIO = {"minimum": 0, "maximum": 1e15}
_RETRY_MINUTES = {"minimum": 1, "maximum": 366 * 24 * 60}  # a year
_PRIORITY = {"minimum": -(10**6), "maximum": 10**6}  # taskPriority / currentPriority

# --- production task brokerage (task → nucleus) --------------------------------------------------
_reg(
    "DISK_THRESHOLD",
    FLOAT,
    100.0,
    "Free space a nucleus' storages must keep after the expected output of its remaining work.",
    unit="TB",
    **_SIZE,
)
_reg(
    "DISK_THRESHOLD_<gshare>",
    FLOAT,
    100.0,
    "DISK_THRESHOLD for one global share (e.g. DISK_THRESHOLD_Express); unset: DISK_THRESHOLD.",
    unit="TB",
    family=True,
    **_SIZE,
)
_reg(
    "FREE_DISK_CUTOFF",
    FLOAT,
    1000.0,
    "spaceFreeCutoff: the most free space that counts in the nucleus weight.",
    unit="TB",
    **_SIZE,
)
_reg(
    "INPUT_SIZE_THRESHOLD",
    FLOAT,
    1.0,
    "The local-size fraction is checked only above this total input size.",
    unit="GB",
    **_SIZE,
)
_reg(
    "INPUT_SIZE_FRACTION",
    FLOAT,
    0.1,
    "Minimum fraction of the input bytes a nucleus must hold locally.",
    minimum=0,
    maximum=1,
)
_reg(
    "INPUT_NUM_THRESHOLD",
    INT,
    100,
    "The local-file fraction is checked only above this number of input files.",
    unit="files",
    **_COUNT,
)
_reg(
    "INPUT_NUM_FRACTION",
    FLOAT,
    0.1,
    "Minimum fraction of the input files a nucleus must hold locally.",
    minimum=0,
    maximum=1,
)
_reg(
    "MIN_IO_INTENSITY_WITH_LOCAL_DATA",
    FLOAT,
    200.0,
    "Locality may be waived at or below this ioIntensity; above it, the weight uses local size.",
    unit="kB/s",
    **_SIZE,
)
_reg(
    "MIN_INPUT_SIZE_WITH_LOCAL_DATA",
    FLOAT,
    10000.0,
    "Locality may be waived at or below this total input size.",
    unit="GB",
    **_SIZE,
)
_reg(
    "MAX_TASK_PRIO_WITH_LOCAL_DATA",
    INT,
    800,
    "Locality is waived for tasks at or above this priority when no nucleus passes it.",
    **_PRIORITY,
)
_reg(
    "TASK_BROKERAGE_RETRY_MINUTES",
    INT,
    30,
    "A task no nucleus passed is pending this long, then retried.",
    unit="min",
    **_RETRY_MINUTES,
)

# --- production job brokerage (jobs → queues) ----------------------------------------------------
J = "brokerage: jobs"
_reg(
    "NQUEUED_SAT_CAP",
    INT,
    150,
    "Skip a queue whose link to the nucleus has more files queued.",
    J,
    unit="files",
    minimum=1,
    maximum=10**9,
)
_reg(
    "NQUEUED_NUC_CAP_FOR_JOBS",
    INT,
    10000,
    "Skip every queue when more files than this are queued into the nucleus.",
    J,
    unit="files",
    **_COUNT,
)
_reg(
    "IO_INTENSITY_CUTOFF",
    FLOAT,
    200.0,
    "Above this ioIntensity, queues that must move much input are skipped.",
    J,
    unit="kB/s",
    **_SIZE,
)
_reg(
    "SIZE_CUTOFF_TO_MOVE_INPUT",
    FLOAT,
    10.0,
    "Most missing input a queue may need to receive (I/O-intensive tasks).",
    J,
    unit="GB",
    **_SIZE,
)
_reg(
    "NUM_CUTOFF_TO_MOVE_INPUT",
    INT,
    100,
    "Most missing input files a queue may need to receive (I/O-intensive tasks).",
    J,
    unit="files",
    **_COUNT,
)
_reg(
    "MAX_DISKIO_DEFAULT",
    FLOAT,
    1e10,
    "diskIO limit per core of a queue without maxDiskIO.",
    J,
    unit="kB/s per core",
    **_DISKIO,
)
_reg(
    "NW_THRESHOLD",
    FLOAT,
    1.7,
    "Urgent or priority ≥ 1000 tasks need a network weight ≥ NW_THRESHOLD × NW_WEIGHT_MULTIPLIER.",
    J,
    **_RATIO,
)
_reg("NW_WEIGHT_MULTIPLIER", FLOAT, 1.0, "See NW_THRESHOLD.", J, **_RATIO)
_reg(
    "NW_QUEUE_IMPORTANCE",
    FLOAT,
    0.5,
    "Network weight = importance × queuedWeight + (1 − importance) × throughputWeight.",
    J,
    minimum=0,
    maximum=1,
)
_reg(
    "WORK_SHORTAGE",
    BOOL,
    False,
    "When true, skip opportunistic queues and pledged queues running more cores than pledged.",
    J,
)
_reg(
    "STORAGE_MIN_FREE_SIZE",
    FLOAT,
    200.0,
    "Free space a queue's output storage needs.",
    J,
    unit="GB",
    **_SIZE,
)
_reg(
    "JOB_BROKERAGE_RETRY_MINUTES",
    INT,
    60,
    "A task whose every queue was skipped is pending this long.",
    J,
    unit="min",
    **_RETRY_MINUTES,
)
_reg(
    "JOB_BROKERAGE_MAX_TASKS",
    INT,
    2000,
    "Tasks brokered per job-brokerage cycle (highest priority first).",
    J,
    minimum=1,
    maximum=10**6,
)
_reg(
    "SOFTWARE_ALL",
    JSON,
    {"tags": []},
    "The software dictionary of the 'ALL' queue: tags whose sources resolve container names.",
    J,
    shape=SOFTWARE,
)

# --- analysis brokerage (PanDA's analysis defaults; unset caps are 0 = off) -----------------------
A = "brokerage: analysis"
for _name, _help in (
    (
        "CAP_RUNNING_USER_JOBS",
        "Throttle a user over this many running jobs (or 2× queued); 0: off.",
    ),
    (
        "CAP_RUNNING_USER_CORES",
        "Throttle a user over this many running cores (or 2× queued); 0: off.",
    ),
    ("CAP_RUNNING_GROUP_JOBS", "As CAP_RUNNING_USER_JOBS, for a task's workingGroup; 0: off."),
    ("CAP_RUNNING_GROUP_CORES", "As CAP_RUNNING_USER_CORES, for a task's workingGroup; 0: off."),
):
    _reg(_name, INT, 0, _help, A, **_COUNT)
_reg(
    "USER_USAGE_THRESHOLD_A",
    FLOAT,
    1000.0,
    "Class A tasks are throttled when User Analysis usage exceeds max(this / the user's running "
    "slots at hi sites, 1) × its target.",
    A,
    **_SIZE,
)
_reg(
    "IO_INTENSITY_CUTOFF_USER",
    FLOAT,
    -1.0,
    "At or below this ioIntensity the data-locality check is skipped; negative: unset.",
    A,
    unit="kB/s",
    minimum=-1,
    maximum=1e9,
)
_reg(
    "DATA_CHECK_TIMEOUT_USER",
    FLOAT,
    0.0,
    "Skip the data-locality check when the task's last successful brokerage is older; 0: unset.",
    A,
    unit="h",
    **_HOURS,
)
_reg(
    "TW_DONE_JOB_STAT",
    FLOAT,
    6.0,
    "Window for the failed/closed jobs filter.",
    A,
    unit="h",
    **_HOURS,
)
_reg(
    "MIN_BAD_JOBS_TO_SKIP_PQ",
    INT,
    5,
    "Failed + closed must stay below max(2 × finished, this).",
    A,
    **_COUNT,
)
_reg(
    "BASE_QUEUE_LENGTH_PER_PQ",
    FLOAT,
    100.0,
    "Stabilizer: queues shorter are never throttled.",
    A,
    **_SIZE,
)
_reg(
    "BASE_EXPECTED_WAIT_HOUR_ON_PQ",
    FLOAT,
    8.0,
    "Stabilizer: queues shorter than this × to-running rate are never throttled.",
    A,
    unit="h",
    **_HOURS,
)
_reg(
    "BASE_DEFAULT_QUEUE_LENGTH_PER_PQ_USER", FLOAT, 5.0, "Stabilizer: max_q_len floor.", A, **_SIZE
)
_reg("BASE_QUEUE_RATIO_ON_PQ", FLOAT, 0.05, "Stabilizer: max_q_len ≥ this × nR(PQ).", A, **_RATIO)
_reg(
    "STATIC_MAX_QUEUE_RUNNING_RATIO", FLOAT, 2.0, "Stabilizer: nQ_max ≥ this × nR(PQ).", A, **_RATIO
)
_reg(
    "MAX_EXPECTED_WAIT_HOUR",
    FLOAT,
    12.0,
    "Stabilizer: nQ_max ≥ this × to-running rate.",
    A,
    unit="h",
    **_HOURS,
)
_reg(
    "ANALY_NEW_BASIC_WEIGHT",
    BOOL,
    False,
    "Use the new analysis basic weight Ws × Wq (site and task classes) instead of the original.",
    A,
)
_reg(
    "ANALY_WEIGHT_EPSILON_1",
    FLOAT,
    0.1,
    "ε1 of the new weight's site-class table (ε1 > ε2).",
    A,
    **_FRACTION,
)
_reg(
    "ANALY_WEIGHT_EPSILON_2",
    FLOAT,
    0.01,
    "ε2 of the new weight's site-class table.",
    A,
    **_FRACTION,
)
_reg(
    "ANALY_BROKERAGE_RETRY_MINUTES",
    INT,
    20,
    "An analysis task whose every queue was skipped is pending this long.",
    A,
    unit="min",
    **_RETRY_MINUTES,
)
