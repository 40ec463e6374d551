from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    label = "notifications"
    verbose_name = "Notices when work ends"

    def ready(self) -> None:
        # parameters, the cycle, the job page's facts
        from notifications import facts, params, services  # noqa: F401
