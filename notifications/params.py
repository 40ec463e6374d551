"""The notices' gdpconfig keys."""

from config.gdpconfig import INT, Param, register

CATEGORY = "notifications"


def _reg(name, default, help, minimum, maximum, unit=""):
    return register(
        Param(
            name=name,
            kind=INT,
            default=default,
            help=help,
            category=CATEGORY,
            minimum=minimum,
            maximum=maximum,
            unit=unit,
        )
    )


_reg(
    "NotificationMaxAttempts",
    4,
    "How many times a notice is tried (a webhook that fails, a mail server that refuses) "
    "before it is given up and shown as such.",
    1,
    20,
)
_reg(
    "NotificationRetrySeconds",
    60,
    "The wait before a failed notice is tried again, doubled after each failure.",
    0,
    86400,
    unit="s",
)
_reg(
    "NotificationBatch",
    2000,
    "The most status changes, tasks and notices each run of the notifications cycle reads: "
    "a bounded run, the rest left for the next.",
    10,
    20_000,
)
_reg(
    "WebhookTimeoutSeconds",
    5,
    "How long a webhook POST may take before it counts as failed.",
    1,
    60,
    unit="s",
)
