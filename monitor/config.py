"""Settings from the environment (LAGMON_*) and an optional librdkafka properties file.

Parsing is strict: a malformed value is a ConfigError that names the variable, so
a broken deployment fails at start rather than running with a silent default.
Secret values (passwords, tokens) are kept out of every repr and message.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

from monitor.models import ConfigError
from monitor.shard import UNSHARDED, Shard, parse_shard

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
SECRET_KEY_PARTS = ("password", "secret", "token", "key.pem", "private", "jaas")


def parse_duration(text: str, name: str = "duration") -> float:
    """'10s', '1m', '500ms', '2h' or plain seconds -> seconds."""
    match = _DURATION.match(str(text))
    if not match:
        raise ConfigError(f"{name}: {text!r} is not a duration (use e.g. 10s, 1m, 500ms)")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds <= 0:
        raise ConfigError(f"{name}: must be more than zero, got {text!r}")
    return seconds


def is_secret(key: str) -> bool:
    return any(part in key.lower() for part in SECRET_KEY_PARTS)


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java/librdkafka properties file: key=value lines, # or ! comments."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise ConfigError(f"LAGMON_KAFKA_CONFIG: cannot read {path}: {e.strerror}") from e
    props = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"LAGMON_KAFKA_CONFIG: {path} line {number}: expected key=value")
        props[key.strip()] = value.strip()
    return props


NOT_LIBRDKAFKA = {"LAGMON_KAFKA_CONFIG", "LAGMON_KAFKA_LIBS"}  # lagmon's own LAGMON_KAFKA_* settings


def kafka_properties_from_env(env) -> dict[str, str]:
    """LAGMON_KAFKA_SASL_PASSWORD=x -> {"sasl.password": "x"}: librdkafka settings one variable each,
    for secrets that come from a secret store as environment variables rather than files."""
    return {
        key[len("LAGMON_KAFKA_") :].lower().replace("_", "."): value
        for key, value in env.items()
        if key.startswith("LAGMON_KAFKA_") and key not in NOT_LIBRDKAFKA
    }


def _regex(name: str, value: str | None) -> re.Pattern | None:
    if not value:
        return None
    try:
        return re.compile(value)
    except re.error as e:
        raise ConfigError(f"{name}: {value!r} is not a valid regular expression ({e})") from e


@dataclass(frozen=True)
class Settings:
    bootstrap_servers: str | None = None
    kafka_config: dict[str, str] = field(default_factory=dict, repr=False)
    cluster_name: str = "default"
    group_allow: re.Pattern | None = None
    group_deny: re.Pattern | None = None
    database_url: str = "sqlite:///lagmon.db"
    poll_interval_s: float = 10.0
    offsets_topic: str = "auto"  # auto | on | off: the __consumer_offsets tail (auto: on when readable)
    offsets_topic_span_s: float = 86400.0  # first start: how far back the tail stores history
    shard: Shard = UNSHARDED  # which of n collectors of this cluster this is (monitor.shard)

    def wants_group(self, group_id: str) -> bool:
        """Allow-list first, then the deny-list wins."""
        if self.group_allow and not self.group_allow.search(group_id):
            return False
        return not (self.group_deny and self.group_deny.search(group_id))

    def librdkafka_config(self) -> dict[str, str]:
        """The client configuration: the properties file, with bootstrap from the environment on top."""
        conf = dict(self.kafka_config)
        if self.bootstrap_servers:
            conf["bootstrap.servers"] = self.bootstrap_servers
        return conf

    def redacted_kafka_config(self) -> dict[str, str]:
        return {k: ("***" if is_secret(k) else v) for k, v in self.librdkafka_config().items()}


def load_settings(env: dict[str, str] | None = None) -> Settings:
    """Settings from `env` (default os.environ); raises ConfigError naming the bad variable."""
    env = os.environ if env is None else env
    kafka_config = read_properties(env["LAGMON_KAFKA_CONFIG"]) if env.get("LAGMON_KAFKA_CONFIG") else {}
    kafka_config.update(kafka_properties_from_env(env))  # a variable wins over the file
    cluster_name = env.get("LAGMON_CLUSTER_NAME", "default").strip()
    if not cluster_name:
        raise ConfigError("LAGMON_CLUSTER_NAME: must not be empty")
    return Settings(
        bootstrap_servers=env.get("LAGMON_BOOTSTRAP_SERVERS") or None,
        kafka_config=kafka_config,
        cluster_name=cluster_name,
        group_allow=_regex("LAGMON_GROUP_ALLOW", env.get("LAGMON_GROUP_ALLOW")),
        group_deny=_regex("LAGMON_GROUP_DENY", env.get("LAGMON_GROUP_DENY")),
        database_url=env.get("LAGMON_DATABASE_URL", "sqlite:///lagmon.db"),
        poll_interval_s=parse_duration(env.get("LAGMON_POLL_INTERVAL", "10s"), "LAGMON_POLL_INTERVAL"),
        offsets_topic=_choice("LAGMON_OFFSETS_TOPIC", env.get("LAGMON_OFFSETS_TOPIC", "auto"), ("auto", "on", "off")),
        offsets_topic_span_s=parse_duration(env.get("LAGMON_OFFSETS_TOPIC_SPAN", "24h"), "LAGMON_OFFSETS_TOPIC_SPAN"),
        shard=parse_shard(env.get("LAGMON_SHARD"), "LAGMON_SHARD"),
    )


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    value = value.strip().lower()
    if value not in allowed:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(allowed)}")
    return value


def parse_time(text: str, now_ms: int, name: str = "time") -> int:
    """ISO-8601 ('2026-11-22T10:00', UTC unless it names a zone), 'now', or relative ('-1h', '-30m') -> epoch ms."""
    from datetime import datetime

    text = text.strip()
    if text == "now":
        return now_ms
    if text.startswith("-"):
        return now_ms - int(parse_duration(text[1:], name) * 1000)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is neither ISO-8601 (2026-11-22T10:00Z) nor relative (-1h)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
