from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    label = "monitoring"
    verbose_name = "Operators' summaries"

    def ready(self) -> None:
        from config import refresh

        # the summaries offer the monitoring pages' auto-refresh toggle
        refresh.register(
            "monitoring:job-summary",
            "monitoring:held-back",
            "monitoring:pilot-summary",
            "monitoring:error-summary",
        )
