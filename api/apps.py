from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API under /api/v1/: every viewset and serializer (docs/developer-guide.md,
    Layout)."""

    name = "api"
    verbose_name = "REST API"

    def ready(self) -> None:
        from api.core.authentication import connect_signals

        connect_signals()  # a deleted or rotated token leaves the token cache at once
