# The simulated clock's state lives in config (core.models.SimulationClock): every process's
# clock reads it. The simulator itself keeps no state of its own beyond its CycleRun records.
