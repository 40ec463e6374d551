"""The monitoring pages that offer an auto-refresh toggle (off by default; when on, the page
reloads every REFRESH_SECONDS while it is in view), by URL name with its namespace, as
`request.resolver_match.view_name` says it."""

REFRESH_SECONDS = 30
PAGES = frozenset(
    {
        "home",
        "job-list",
        "taskqueue-list",
        "site-list",
        "pilot-list",
        "director",
        "task-list",
        "decision-list",
        "timeouts",
        "timeout-actions",
        "cycle-runs",
        "group-list",
        "classads:site-ad-list",
        "classads:job-ad-list",
        "classads:negotiation",
        "accounting",
        "monitoring:job-summary",
        "monitoring:held-back",
        "monitoring:pilot-summary",
        "monitoring:error-summary",
    }
)


def offered(request) -> bool:
    match = getattr(request, "resolver_match", None)
    return match is not None and match.view_name in PAGES
