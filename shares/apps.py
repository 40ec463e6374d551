from django.apps import AppConfig


class SharesConfig(AppConfig):
    name = "shares"
    verbose_name = "Groups and shares"
