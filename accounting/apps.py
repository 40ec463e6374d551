from django.apps import AppConfig


class AccountingConfig(AppConfig):
    name = "accounting"
    verbose_name = "Accounting"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the parameter and the cycle register themselves
        from accounting import params, services  # noqa: F401
