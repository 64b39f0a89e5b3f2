"""Parsers for setting values: text in, a value out, or one ConfigError naming where the text came from.

Each takes `(text, name)`, so one parser serves a variable (LAGMON_POLL_INTERVAL)
and a command-line option (--interval) alike. Secret values (passwords, tokens,
channel URLs) never appear in a message.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from datetime import UTC
from pathlib import Path
from typing import TypeVar

from monitor.models import ConfigError

E = TypeVar("E", bound=enum.StrEnum)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
_JVM_SIZE = re.compile(r"^\d+[kmgt]?$", re.I)  # -Xmx
_DRIVER_MEMORY = re.compile(r"^(\d+)([kmgt])$", re.I)  # -Xmx, which spark.driver.memory becomes
_UNIT_MIB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
MIN_DRIVER_MEMORY_MIB = 512
SECRET_KEY_PARTS = ("password", "secret", "token", "key.pem", "private", "jaas")
SPARK_LOG_LEVELS = ("ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN")


def parse_duration(text: str, name: str = "duration") -> float:
    """'10s', '1m', '500ms', '2h' or plain seconds -> seconds."""
    match = _DURATION.match(str(text))
    if not match:
        raise ConfigError(f"{name}: {text!r} is not a duration (use e.g. 10s, 1m, 500ms)")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds <= 0:
        raise ConfigError(f"{name}: must be more than zero, got {text!r}")
    return seconds


def duration_between(minimum_s: float, maximum_s: float) -> Callable[[str, str], float]:
    """A parser of durations from `minimum_s` to `maximum_s` seconds (a dashboard refreshing every millisecond
    is a typo); the error names the bound as a person writes it."""

    def parse(text: str, name: str) -> float:
        seconds = parse_duration(text, name)
        if seconds < minimum_s:
            raise ConfigError(f"{name}: {text!r} is less than {minimum_s:g}s")
        if seconds > maximum_s:
            raise ConfigError(f"{name}: {text!r} is more than {_as_written(maximum_s)}")
        return seconds

    return parse


def parse_interval(text: str, name: str) -> float:
    """A collector's time between cycles: 100ms to 1h (shorter is a typo; longer is not monitoring)."""
    return duration_between(0.1, 3600.0)(text, name)


def silence_end(text: str, now_ms: int, longest_s: float, name: str) -> int:
    """When a silence of `text` from `now_ms` ends: it lasts at least a second and at most `longest_s`
    (LAGMON_SILENCE_MAX), so a typo cannot mute an alert for years."""
    return now_ms + int(duration_between(1.0, longest_s)(text, name) * 1000)


def _as_written(seconds: float) -> str:
    """A bound as a person writes it: 604800 -> '7d', 90 -> '90s'."""
    for unit in ("d", "h", "m"):
        if seconds >= _UNIT_S[unit] and seconds % _UNIT_S[unit] == 0:
            return f"{seconds / _UNIT_S[unit]:g}{unit}"
    return f"{seconds:g}s"


def parse_time(text: str, now_ms: int, name: str = "time") -> int:
    """ISO-8601 ('2026-11-22T10:00', UTC unless it names a zone), 'now', or relative ('-1h', '-30m') -> epoch ms."""
    from datetime import datetime

    text = text.strip()
    if text == "now":
        return now_ms
    if text.startswith("-"):
        return _within_epoch(now_ms - int(parse_duration(text[1:], name) * 1000), text, name)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is neither ISO-8601 (2026-11-22T10:00Z) nor relative (-1h)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _within_epoch(int(moment.timestamp() * 1000), text, name)


LATEST_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the last moment datetime can show


def _within_epoch(ms: int, text: str, name: str) -> int:
    """`ms` when it is a moment lagmon can store and show: from 1970 to the year 9999."""
    if not 0 <= ms <= LATEST_MS:
        raise ConfigError(f"{name}: {text!r} is outside 1970 to 9999")
    return ms


def parse_regex(text: str, name: str) -> re.Pattern:
    try:
        return re.compile(text)
    except re.error as e:
        raise ConfigError(f"{name}: {text!r} is not a valid regular expression ({e})") from e


def one_of(choices: type[E]) -> Callable[[str, str], E]:
    """A parser accepting the values of the StrEnum `choices` whatever the case and surrounding blanks."""

    def parse(text: str, name: str) -> E:
        value = text.strip().lower()
        if value not in {c.value for c in choices}:
            raise ConfigError(f"{name}: {value!r} is not one of {', '.join(choices)}")
        return choices(value)

    return parse


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_non_empty(text: str, name: str) -> str:
    value = text.strip()
    if not value:
        raise ConfigError(f"{name}: must not be empty")
    return value


def parse_whole(text: str, name: str) -> int:
    """A count where 0 means off."""
    value = text.strip()
    if not _is_number(value):
        raise ConfigError(f"{name}: {value!r} is not a whole number (0 = off, e.g. 20)")
    return int(value)


def whole_between(minimum: int, maximum: int) -> Callable[[str, str], int]:
    """A parser of whole numbers from `minimum` to `maximum` (a backlog of a billion MB is a typo)."""

    def parse(text: str, name: str) -> int:
        value = parse_whole(text, name)
        if not minimum <= value <= maximum:
            raise ConfigError(f"{name}: {value} is not from {minimum} to {maximum}")
        return value

    return parse


def parse_port(text: str, name: str) -> int:
    if not _is_number(text) or int(text) > 65535:
        raise ConfigError(f"{name}: {text!r} is not a port number")
    return int(text)


FLAG_ON = ("1", "true", "yes", "on")
FLAG_OFF = ("", "0", "false", "no", "off")


def parse_flag(text: str, name: str) -> bool:
    """1/true/yes/on on, 0/false/no/off or empty off (any case): anything else is a mistake, not a silent off."""
    value = text.strip().lower()
    if value not in FLAG_ON + FLAG_OFF:
        raise ConfigError(f"{name}: {text!r} is not on (1, true, yes, on) or off (0, false, no, off)")
    return value in FLAG_ON


def parse_flag_or_auto(text: str, name: str) -> bool | None:
    """As parse_flag, or auto (None: lagmon decides when it knows more); empty is auto."""
    if text.strip().lower() in ("", "auto"):
        return None
    try:
        return parse_flag(text, name)
    except ConfigError:
        raise ConfigError(f"{name}: {text!r} is not auto, on (1, true, yes, on) or off (0, false, no, off)") from None


def parse_jvm_size(text: str, name: str) -> str:
    if not _JVM_SIZE.match(text.strip()):
        raise ConfigError(f"{name}: {text!r} is not a JVM heap size (e.g. 384m, 2g)")
    return text.strip()


def memory_mib(text: str) -> float:
    """A memory size as -Xmx takes it (512m, 6g), in MiB."""
    match = _DRIVER_MEMORY.match(text.strip())
    if not match:
        raise ValueError(f"not a memory size: {text!r}")
    return int(match.group(1)) * _UNIT_MIB[match.group(2).lower()]


def parse_driver_memory(text: str, name: str) -> str:
    """The driver JVM's heap, as its -Xmx takes it (Spark's launcher passes it on as is): a whole number with
    k, m, g or t, of at least 512m (Spark refuses a heap under 450 MiB; bare digits would be bytes)."""
    try:
        mib = memory_mib(text)
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is not a Spark memory size (e.g. 512m, 6g)") from None
    if mib < MIN_DRIVER_MEMORY_MIB:
        raise ConfigError(f"{name}: {text!r} is too small: Spark's driver needs at least {MIN_DRIVER_MEMORY_MIB}m")
    return text.strip()


def parse_spark_log_level(text: str, name: str) -> str:
    level = text.strip().upper()
    if level not in SPARK_LOG_LEVELS:
        raise ConfigError(f"{name}: {text!r} is not one of {', '.join(SPARK_LOG_LEVELS)}")
    return level


def parse_channels(text: str, source: str = "LAGMON_CHANNELS") -> dict[str, str]:
    """'name=url,name2=url2' -> {name: url}; the error never repeats a URL."""
    channels = {}
    for i, item in enumerate(p for p in (text or "").split(",") if p.strip()):
        name, sep, url = item.partition("=")
        if not sep or not name.strip() or not url.strip() or "://" not in url:
            raise ConfigError(f"{source}: item {i + 1} is not name=scheme://... (e.g. ops=json://host/path)")
        channels[name.strip()] = url.strip()
    return channels


def is_secret(key: str) -> bool:
    return any(part in key.lower() for part in SECRET_KEY_PARTS)


def read_properties(path: str | Path, name: str = "LAGMON_KAFKA_CONFIG") -> dict[str, str]:
    """A Java/librdkafka properties file: key=value lines, # or ! comments."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise ConfigError(f"{name}: cannot read {path}: {e.strerror}") from e
    props = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{name}: {path} line {number}: expected key=value")
        props[key.strip()] = value.strip()
    return props


def librdkafka_family(env: Mapping[str, str], prefix: str, own: frozenset[str]) -> dict[str, str]:
    """LAGMON_KAFKA_SASL_PASSWORD=x -> {"sasl.password": "x"}: librdkafka settings one variable each,
    for secrets that come from a secret store as environment variables rather than files.
    `own` are lagmon's settings that share the prefix."""
    return {
        key[len(prefix) :].lower().replace("_", "."): value
        for key, value in env.items()
        if key.startswith(prefix) and key not in own
    }
