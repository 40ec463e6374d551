from django.apps import AppConfig


class SimulationConfig(AppConfig):
    name = "simulation"
    verbose_name = "The simulated grid"

    def ready(self) -> None:
        from simulation import params, services  # noqa: F401  (parameters, cycle)
