from django.apps import AppConfig


class MatcherConfig(AppConfig):
    name = "matcher"
    verbose_name = "Jobs, TaskQueues and matching"

    def ready(self) -> None:
        from matcher import changelog, health, params, pilots, priorities, services  # noqa: F401
        from matcher.share_sources import register

        register()  # the waiting work and TaskQueues the Shares page shows
