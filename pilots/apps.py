from django.apps import AppConfig


class PilotsConfig(AppConfig):
    name = "pilots"
    verbose_name = "Pilots and the director"

    def ready(self) -> None:
        # The director's cycles, parameters and metrics register themselves with the apps below.
        from pilots import metrics, params, services  # noqa: F401
