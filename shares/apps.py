from django.apps import AppConfig


class SharesConfig(AppConfig):
    name = "shares"
    verbose_name = "Groups and shares"

    def ready(self) -> None:
        from shares import params  # noqa: F401  (registers the fair-share parameters)
