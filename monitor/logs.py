"""lagmon's logs: every process logs through `logging`, to stderr, one record per line.

Each line starts with the time in UTC, ISO-8601 with milliseconds and `Z`, then the
level. `LAGMON_LOG_FORMAT=json` makes each record one JSON object instead, for log
collectors: `time`, `level`, `logger`, `message`, plus the record's own fields (a
collector cycle carries its figures: `cycle_seconds`, `sampling_seconds`, `groups`,
`partitions`, ...). What a command produces (a table, `--json`) is not a log and
stays on stdout.

lagmon's loggers are `lagmon.<part>` (`lagmon.collector`, `lagmon.tail`, ...);
`LAGMON_LOG_LEVEL` sets their level. Other libraries' loggers show warnings and
errors only. The stdlib is enough for this (a formatter of thirty lines), so no
logging library is a dependency.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TextIO

ROOT = "lagmon"
FORMATS = ("text", "json")
LEVELS = ("debug", "info", "warning", "error")
# What every LogRecord has; anything else on a record came from `extra=` and is a field of its own.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


def get_logger(part: str) -> logging.Logger:
    """lagmon's logger for one part: `get_logger("collector")` is `lagmon.collector`."""
    return logging.getLogger(f"{ROOT}.{part}")


def format_utc(created: float) -> str:
    """`2026-11-25T12:00:01.123Z` for a record's `created` (seconds since the epoch)."""
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_fields(record: logging.LogRecord) -> dict:
    """The fields a call added with `extra=`, in the order given."""
    return {k: v for k, v in vars(record).items() if k not in _RECORD_ATTRIBUTES and not k.startswith("_")}


class TextFormatter(logging.Formatter):
    """`2026-11-25T12:00:01.123Z INFO  collector: 12 groups, ...`: lagmon's parts by their short name."""

    def format(self, record: logging.LogRecord) -> str:
        name = record.name.removeprefix(f"{ROOT}.")
        line = f"{format_utc(record.created)} {record.levelname:<7} {name}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": format_utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **record_fields(record),
        }
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, ensure_ascii=False)


class _LagmonHandler(logging.StreamHandler):
    """The handler configure_logging installs (and replaces when called again); without a stream of its
    own it writes to whatever sys.stderr is at the time (test runners swap it)."""

    def __init__(self, stream: TextIO | None):
        super().__init__(stream or sys.stderr)
        self._to_stderr = stream is None

    def emit(self, record: logging.LogRecord) -> None:
        if self._to_stderr:
            self.stream = sys.stderr
        super().emit(record)


def configure_logging(fmt: str = "text", level: str = "info", stream: TextIO | None = None) -> None:
    """Route every log record to stderr (or `stream`) as `fmt` (text or json); lagmon's loggers at `level`."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _LagmonHandler)]:
        root.removeHandler(handler)
    handler = _LagmonHandler(stream)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel(logging.WARNING)  # other libraries: warnings and errors
    logging.captureWarnings(True)  # Python's warnings too, as records of `py.warnings`
    logging.getLogger(ROOT).setLevel(level.upper())
