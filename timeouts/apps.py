from django.apps import AppConfig


class TimeoutsConfig(AppConfig):
    name = "timeouts"
    label = "timeouts"
    verbose_name = "Timeout rules"

    def ready(self) -> None:
        from timeouts import params, services  # noqa: F401  (parameters, cycle)
