import random
import signal
import time

from django.core.management.base import BaseCommand, CommandError

from core import gdpconfig
from core.cycles import run_cycle
from simulation import services


class Command(BaseCommand):
    help = (
        "Run the simulated grid: every SimTickSeconds, work arrives and the cycles due on the "
        "simulated clock run (make run starts it). Ctrl-C stops it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--speed", type=float, help="set the clock's speed first")
        parser.add_argument("--ticks", type=int, default=0, help="stop after this many (0: never)")
        parser.add_argument("--seed", type=int, help="seed the arrivals (repeatable runs)")

    def handle(self, speed, ticks, seed, **options):
        services.clock_row()
        if speed is not None:
            try:
                services.set_clock(speed=speed)
            except services.ClockError as exc:
                raise CommandError(str(exc)) from None
        rng = random.Random(seed)
        stop = {"now": False}
        signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
        done = 0
        try:
            while not stop["now"]:
                run = run_cycle("simulation", rng=rng)
                self.stdout.write(f"{run.started:%Y-%m-%d %H:%M:%S} {run.status} {run.counts}")
                done += 1
                if ticks and done >= ticks:
                    break
                time.sleep(gdpconfig.get("SimTickSeconds"))
        except KeyboardInterrupt:
            pass
