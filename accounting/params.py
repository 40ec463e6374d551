"""The accounting's gdpconfig keys."""

from core.gdpconfig import INT, Param, register

ACCOUNTING_DAYS = register(
    Param(
        name="AccountingDays",
        kind=INT,
        default=90,
        minimum=1,
        maximum=3650,
        unit="d",
        category="accounting",
        help="How long the hourly accounting (running jobs, jobs ended, CPU) is kept.",
    )
)
