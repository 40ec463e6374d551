"""Scratch databases on the suite's PostgreSQL server, for tests that start a whole server or a
command of their own on an empty database (the suite's test database stays the suite's)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from urllib.parse import quote

import psycopg
from django.conf import settings


def _server() -> dict:
    db = settings.DATABASES["default"]
    return {
        "host": db["HOST"] or "127.0.0.1",
        "port": int(db["PORT"] or 5432),
        "user": db["USER"],
        "password": db.get("PASSWORD") or None,
    }


def url_of(name: str) -> str:
    server = _server()
    auth = server["user"] + (f":{server['password']}" if server["password"] else "")
    return f"postgres://{auth}@{quote(server['host'], safe='')}:{server['port']}/{name}"


@contextlib.contextmanager
def scratch_database(tag: str) -> Iterator[str]:
    """A new, empty database for the block; its DATABASE_URL. Dropped afterwards, whoever is
    still connected to it."""
    name = f"gridwms_scratch_{tag}_{os.getpid()}"
    with psycopg.connect(dbname="postgres", autocommit=True, **_server()) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url_of(name)
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **_server()) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
