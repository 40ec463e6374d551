"""The notices' gdpconfig keys."""

from core.gdpconfig import INT, STR_LIST, Param, register
from notifications.webhooks import ALLOWED, allow_list_problem

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
register(
    Param(
        name=ALLOWED,
        kind=STR_LIST,
        default=[],
        category=CATEGORY,
        check=allow_list_problem,
        help="Hosts (by name) and addresses or networks (CIDR, e.g. 10.1.0.0/16) a webhook may "
        "reach although they are loopback, private or link-local: e.g. an internal chat "
        "gateway. Empty: webhooks reach only public addresses.",
    )
)
_reg(
    "NotificationSenders",
    4,
    "How many notices a run of the notifications cycle sends at once.",
    1,
    32,
)
_reg(
    "NotificationSendsPerHost",
    2,
    "How many notices a run sends at once to one host (a webhook's, or the mail server): a "
    "slow host holds at most this many senders.",
    1,
    16,
)
_reg(
    "NotificationHostSeconds",
    15,
    "The most time a run spends sending to one host; past it, that host's other notices "
    "wait for the next run and the others go on.",
    1,
    600,
    unit="s",
)
_reg(
    "NotificationRunSeconds",
    45,
    "A run of the notifications cycle starts no send after this long (those under way end "
    "within WebhookTimeoutSeconds); the rest waits for the next run.",
    1,
    300,
    unit="s",
)
