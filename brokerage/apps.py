from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    name = "brokerage"
    verbose_name = "PanDA brokerage"

    def ready(self) -> None:
        from brokerage import params, params_timeouts, services, timeout_services  # noqa: F401
