from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    name = "brokerage"
    verbose_name = "PanDA brokerage"

    def ready(self) -> None:
        # params, then the cycles.
        from brokerage import lifecycle, params  # noqa: F401
        from brokerage.services import analysis, production  # noqa: F401
