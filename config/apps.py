from django.apps import AppConfig


class ConfigConfig(AppConfig):
    name = "config"
    verbose_name = "Live parameters and cycles"

    def ready(self) -> None:
        # Registering the parameters of each app is an import side effect of its gdpconfig module.
        from config import params  # noqa: F401
        from config.api.authentication import connect_signals

        connect_signals()
