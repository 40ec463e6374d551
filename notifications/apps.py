from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    label = "notifications"
    verbose_name = "Notices when work ends"

    def ready(self) -> None:
        from notifications import params, services  # noqa: F401  (parameters, the cycle)
