from django.apps import AppConfig


class SimulationConfig(AppConfig):
    name = "simulation"
    verbose_name = "The simulated grid"

    def ready(self) -> None:
        # The parameters and the cycles (simulation, pilot_status) register themselves.
        from simulation import params, services, simulated_ce  # noqa: F401
