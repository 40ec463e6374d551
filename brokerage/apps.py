from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    name = "brokerage"
    verbose_name = "PanDA brokerage"

    def ready(self) -> None:
        # params, explainers, health alerts; then the cycles.
        from brokerage import health, lifecycle, params, people, why  # noqa: F401
        from brokerage.services import analysis, production  # noqa: F401
