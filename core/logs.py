"""Log lines: plain text by default, one JSON object per event when LOG_FORMAT=json.

The same formatter serves Django's loggers, the cycles, and gunicorn's error and access logs
(gridwms/gunicorn.conf.py gives gunicorn a logger class using it), so that a log shipper
reads one format from every process of a host.
"""

from __future__ import annotations

import datetime as dt
import logging
import os

import orjson

# LogRecord attributes that are not extra fields given by the caller.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


_ACCESS_NAMES = {"addr": "remote", "dt_ms": "ms", "query_string": "query"}


def json_logs() -> bool:
    return os.environ.get("LOG_FORMAT", "").strip().lower() == "json"


class JsonFormatter(logging.Formatter):
    """{"time", "level", "logger", "message", ...extra fields, "exc"?} on one line."""

    def format(self, record: logging.LogRecord) -> str:
        event = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                event[key] = value
        if isinstance(record.args, dict):  # fields given as a mapping: granian's access log
            for key, value in record.args.items():
                key = _ACCESS_NAMES.get(key, key)  # named as gunicorn's access lines are
                if key == "ms":
                    value = round(value, 3)
                event.setdefault(key, value)
        if record.exc_info:
            event["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(event, default=str).decode()


def logging_config(level: str) -> dict:
    """settings.LOGGING: every logger to stderr, as text or JSON lines."""
    formatter = (
        {"()": JsonFormatter} if json_logs() else {"format": "%(levelname)s %(name)s %(message)s"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"gridwms": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "gridwms"}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {"django.db.backends": {"level": "WARNING"}},
    }
