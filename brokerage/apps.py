from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    name = "brokerage"
    verbose_name = "PanDA brokerage"

    def ready(self) -> None:
        from brokerage import params, services  # noqa: F401  (params, cycles)
