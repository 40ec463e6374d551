from django.apps import AppConfig


class RetentionConfig(AppConfig):
    name = "retention"
    verbose_name = "Retention of finished work"

    def ready(self) -> None:
        from retention import params, services  # noqa: F401  (parameters, cycle)
