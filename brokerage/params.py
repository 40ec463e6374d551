"""The brokerage's gdpconfig keys, with PanDA's names and PanDA's defaults (reference/panda.md)."""

from config.gdpconfig import BOOL, FLOAT, INT, JSON, Param, register


def _reg(name, kind, default, help, category="brokerage: tasks", **kw):
    return register(
        Param(name=name, kind=kind, default=default, help=help, category=category, **kw)
    )


_POS = {"minimum": 0}

# --- production task brokerage (task → nucleus) --------------------------------------------------
_reg(
    "DISK_THRESHOLD",
    FLOAT,
    100.0,
    "Free space a nucleus' storages must keep after the expected output of its remaining work.",
    unit="TB",
    **_POS,
)
_reg(
    "DISK_THRESHOLD_<gshare>",
    FLOAT,
    100.0,
    "DISK_THRESHOLD for one global share (e.g. DISK_THRESHOLD_Express); unset: DISK_THRESHOLD.",
    unit="TB",
    family=True,
    **_POS,
)
_reg(
    "FREE_DISK_CUTOFF",
    FLOAT,
    1000.0,
    "spaceFreeCutoff: the most free space that counts in the nucleus weight.",
    unit="TB",
    **_POS,
)
_reg(
    "INPUT_SIZE_THRESHOLD",
    FLOAT,
    1.0,
    "The local-size fraction is checked only above this total input size.",
    unit="GB",
    **_POS,
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
    **_POS,
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
    **_POS,
)
_reg(
    "MIN_INPUT_SIZE_WITH_LOCAL_DATA",
    FLOAT,
    10000.0,
    "Locality may be waived at or below this total input size.",
    unit="GB",
    **_POS,
)
_reg(
    "MAX_TASK_PRIO_WITH_LOCAL_DATA",
    INT,
    800,
    "Locality is waived for tasks at or above this priority when no nucleus passes it.",
)
_reg(
    "TASK_BROKERAGE_RETRY_MINUTES",
    INT,
    30,
    "A task no nucleus passed is pending this long, then retried.",
    unit="min",
    minimum=1,
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
)
_reg(
    "NQUEUED_NUC_CAP_FOR_JOBS",
    INT,
    10000,
    "Skip every queue when more files than this are queued into the nucleus.",
    J,
    unit="files",
    **_POS,
)
_reg(
    "IO_INTENSITY_CUTOFF",
    FLOAT,
    200.0,
    "Above this ioIntensity, queues that must move much input are skipped.",
    J,
    unit="kB/s",
    **_POS,
)
_reg(
    "SIZE_CUTOFF_TO_MOVE_INPUT",
    FLOAT,
    10.0,
    "Most missing input a queue may need to receive (I/O-intensive tasks).",
    J,
    unit="GB",
    **_POS,
)
_reg(
    "NUM_CUTOFF_TO_MOVE_INPUT",
    INT,
    100,
    "Most missing input files a queue may need to receive (I/O-intensive tasks).",
    J,
    unit="files",
    **_POS,
)
_reg(
    "MAX_DISKIO_DEFAULT",
    FLOAT,
    1e10,
    "diskIO limit per core of a queue without maxDiskIO.",
    J,
    unit="kB/s per core",
    **_POS,
)
_reg(
    "NW_THRESHOLD",
    FLOAT,
    1.7,
    "Urgent or priority ≥ 1000 tasks need a network weight ≥ NW_THRESHOLD × NW_WEIGHT_MULTIPLIER.",
    J,
    **_POS,
)
_reg("NW_WEIGHT_MULTIPLIER", FLOAT, 1.0, "See NW_THRESHOLD.", J, **_POS)
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
    **_POS,
)
_reg(
    "JOB_BROKERAGE_RETRY_MINUTES",
    INT,
    60,
    "A task whose every queue was skipped is pending this long.",
    J,
    unit="min",
    minimum=1,
)
_reg(
    "JOB_BROKERAGE_MAX_TASKS",
    INT,
    2000,
    "Tasks brokered per job-brokerage cycle (highest priority first).",
    J,
    minimum=1,
)
_reg(
    "SOFTWARE_ALL",
    JSON,
    {"tags": []},
    "The software dictionary of the 'ALL' queue: tags whose sources resolve container names.",
    J,
)
