from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    # The label names the tables (config_*) and the migration history: it stays what it was
    # when the package was called config, so an existing database needs no rename.
    label = "config"
    verbose_name = "Live parameters and cycles"

    def ready(self) -> None:
        # Registering the parameters of each app is an import side effect of its gdpconfig module.
        from core import params  # noqa: F401
