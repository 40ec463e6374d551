from django.apps import AppConfig


class PilotsConfig(AppConfig):
    name = "pilots"
    verbose_name = "Pilots and the director"

    def ready(self) -> None:
        # The director's cycles, parameters, health alerts, "why" part, home chart and demo step
        # register themselves with the apps below.
        from pilots import demo, health, metrics, params, services, share_sources, why  # noqa: F401
