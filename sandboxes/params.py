"""The sandboxes' bounds and how long their files are kept (gdpconfig)."""

from core.gdpconfig import INT, Param, register

MIB = 1024 * 1024

MAX_INPUT_FILES = register(
    Param(
        name="MaxInputSandboxFiles",
        kind=INT,
        default=20,
        minimum=0,
        maximum=1000,
        category="jobs",
        help="The most input sandbox files a submission may upload with its job.",
    )
)
MAX_INPUT_BYTES = register(
    Param(
        name="MaxInputSandboxBytes",
        kind=INT,
        default=10 * MIB,
        minimum=0,
        maximum=1024 * MIB,
        unit="B",
        category="jobs",
        help="The most bytes a job's input sandbox files may hold together.",
    )
)
MAX_OUTPUT_BYTES = register(
    Param(
        name="MaxOutputSandboxBytes",
        kind=INT,
        default=50 * MIB,
        minimum=0,
        maximum=4096 * MIB,
        unit="B",
        category="jobs",
        help="The most bytes a pilot may upload for a job: stdout, stderr and the output "
        "sandbox's files together.",
    )
)
RETENTION_DAYS = register(
    Param(
        name="SandboxRetentionDays",
        kind=INT,
        default=30,
        minimum=0,
        maximum=36500,
        unit="d",
        category="retention",
        help="Sandbox files (input and output) older than this are deleted by the retention "
        "cycle, the job itself kept; a job's files go with it in any case. 0 keeps them as "
        "long as their job.",
    )
)
