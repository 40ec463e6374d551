from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    name = "brokerage"
    verbose_name = "PanDA brokerage"
