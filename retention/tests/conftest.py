"""A world with finished work of every kind, aged by moving the clock."""

from __future__ import annotations

import pytest

from core import clock, gdpconfig

DAY = 86400


@pytest.fixture
def age(users):
    """age(days): move the clock forward, as if that much time had passed."""

    def move(days: float) -> None:
        clock.advance(days * DAY)

    return move


@pytest.fixture
def killed(submit, users):
    """killed(n, username) -> ids of n jobs submitted and cancelled now (final, with history)."""
    from matcher import services

    def make(n: int = 1, username: str = "alice") -> list[int]:
        ids = []
        for _ in range(n):
            job = submit(username)
            services.kill_job(job.pk, users["admin"], "no longer needed")
            ids.append(job.pk)
        return ids

    return make


@pytest.fixture
def ages():
    """ages(**{kind: days}): set the retention ages (other kinds keep their defaults)."""
    from retention.params import AGES

    def set_ages(**days) -> None:
        for kind, value in days.items():
            gdpconfig.set_value(AGES[kind][0], value)

    return set_ages
