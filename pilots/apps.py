from django.apps import AppConfig


class PilotsConfig(AppConfig):
    name = "pilots"
    verbose_name = "Pilots and the director"

    def ready(self) -> None:
        # The director's cycles, parameters, metrics and demo step register themselves with the
        # apps below.
        from pilots import demo, metrics, params, services  # noqa: F401
