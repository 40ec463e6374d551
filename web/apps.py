from django.apps import AppConfig


class WebConfig(AppConfig):
    """The pages: every view, form, chart and template tag of the dashboard
    (docs/developer-guide.md, Layout)."""

    name = "web"
    verbose_name = "Pages"

    def ready(self) -> None:
        # The pages' sections, facts, alerts and explainers register with the pages below them.
        from web.brokerage import health, people, why  # noqa: F401
        from web.classads import why as classads_why  # noqa: F401
        from web.matcher import health as matcher_health  # noqa: F401
        from web.matcher import people as matcher_people  # noqa: F401
        from web.matcher.share_sources import register
        from web.notifications import facts  # noqa: F401
        from web.pilots import health as pilots_health  # noqa: F401
        from web.pilots import share_sources  # noqa: F401
        from web.pilots import why as pilots_why  # noqa: F401
        from web.sandboxes import facts as sandboxes_facts  # noqa: F401

        register()  # the waiting work and TaskQueues the Shares page shows
