from django.apps import AppConfig


class MatcherConfig(AppConfig):
    name = "matcher"
    verbose_name = "Jobs, TaskQueues and matching"

    def ready(self) -> None:
        from core import metrics
        from matcher import (  # noqa: F401  (each registers itself)
            changelog,
            params,
            services,
            taskqueue_priorities,
        )
        from matcher.metrics import collect

        metrics.register(collect)  # the waiting jobs and TaskQueues on /metrics
