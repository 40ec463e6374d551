from django.apps import AppConfig


class MatcherConfig(AppConfig):
    name = "matcher"
    verbose_name = "Jobs, TaskQueues and matching"

    def ready(self) -> None:
        from matcher import (  # noqa: F401  (each registers itself)
            changelog,
            health,
            params,
            people,
            services,
            taskqueue_priorities,
        )
        from matcher.share_sources import register

        register()  # the waiting work and TaskQueues the Shares page shows
        from config import metrics
        from matcher.metrics import collect

        metrics.register(collect)  # the waiting jobs and TaskQueues on /metrics
