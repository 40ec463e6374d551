from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    name = "brokerage"
    verbose_name = "PanDA brokerage"

    def ready(self) -> None:
        from brokerage import (  # noqa: F401  (params, cycles, explainers, health alerts)
            health,
            lifecycle,
            params,
            services,
            services_analysis,
            why,
        )
