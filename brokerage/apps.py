from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    name = "brokerage"
    verbose_name = "PanDA brokerage"

    def ready(self) -> None:
        from brokerage import params, services, services_analysis, why  # noqa: F401  (params, cycles, explainers)
