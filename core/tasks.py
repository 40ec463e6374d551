"""django-q2 entry point: every schedule calls this with the cycle's kind."""

from core.cycles import run_cycle


def run(kind: str) -> str:
    return run_cycle(kind).status
