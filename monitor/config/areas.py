"""The settings tree: one frozen dataclass per area, as KMinion has, each field with its variable,
default, meaning and parser next to it.

Entry points load the areas they use (`TailSettings.from_env()`, or `load_settings()` for the
four every collector and read command needs) and pass them down; no other module reads a
LAGMON_* variable. AREAS is the tree in the order of docs/configuration.md.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from monitor.config.parse import (
    duration_between,
    is_secret,
    librdkafka_family,
    one_of,
    parse_channels,
    parse_driver_memory,
    parse_flag,
    parse_flag_or_auto,
    parse_interval,
    parse_jvm_size,
    parse_non_empty,
    parse_port,
    parse_regex,
    parse_spark_log_level,
    read_properties,
    whole_between,
)
from monitor.config.tree import Area, declared, family, setting
from monitor.models import Filter, Granularity, TailMode
from monitor.shard import UNSHARDED, Shard, parse_shard

PROJECT_DIR = Path(__file__).resolve().parents[2]
DEFAULT_CLUSTER = "default"
KAFKA_PREFIX = "LAGMON_KAFKA_"


def _librdkafka_variables(env: Mapping[str, str]) -> dict[str, str]:
    """The LAGMON_KAFKA_* family, less lagmon's own settings of that name (LAGMON_KAFKA_CONFIG, ...)."""
    own = frozenset(s.env for area in AREAS for _, s in declared(area) if not s.family)
    return librdkafka_family(env, KAFKA_PREFIX, own)


@dataclass(frozen=True)
class KafkaSettings(Area):
    """Which cluster lagmon watches, what it calls it, and how librdkafka reaches it."""

    title: ClassVar[str] = "Kafka"

    bootstrap_servers: str | None = setting(
        "LAGMON_BOOTSTRAP_SERVERS",
        default=None,
        default_text="the local dev cluster, if one runs",
        meaning="the Kafka cluster to watch",
        blank_is_unset=True,
    )
    file_properties: dict[str, str] = setting(
        "LAGMON_KAFKA_CONFIG",
        default=dict,
        default_text="none",
        meaning="a librdkafka properties file",
        parse=read_properties,
        blank_is_unset=True,
        secret=True,
    )
    env_properties: dict[str, str] = family(
        "LAGMON_KAFKA_*",
        default_text="none",
        meaning="one librdkafka setting per variable, over the file",
        read=_librdkafka_variables,
    )
    cluster: str | None = setting(
        "LAGMON_CLUSTER_NAME",
        default=None,
        default_text="`default` (read commands: the only cluster in the database)",
        meaning="the name every stored row, metric and alert carries",
        parse=parse_non_empty,
    )

    @property
    def cluster_name(self) -> str:
        return self.cluster or DEFAULT_CLUSTER

    def librdkafka_config(self) -> dict[str, str]:
        """The client configuration: the file, then the variables, then the bootstrap servers."""
        conf = {**self.file_properties, **self.env_properties}
        if self.bootstrap_servers:
            conf["bootstrap.servers"] = self.bootstrap_servers
        return conf

    def redacted_kafka_config(self) -> dict[str, str]:
        return {k: ("***" if is_secret(k) else v) for k, v in self.librdkafka_config().items()}


@dataclass(frozen=True)
class CollectorSettings(Area):
    """Which groups this collector samples, and how often."""

    title: ClassVar[str] = "Collector"

    group_allow: re.Pattern | None = setting(
        "LAGMON_GROUP_ALLOW",
        default=None,
        default_text="all groups",
        meaning="only matching group ids are sampled",
        parse=parse_regex,
        blank_is_unset=True,
    )
    group_deny: re.Pattern | None = setting(
        "LAGMON_GROUP_DENY",
        default=None,
        default_text="none",
        meaning="matching group ids are skipped",
        parse=parse_regex,
        blank_is_unset=True,
    )
    topic_allow: re.Pattern | None = setting(
        "LAGMON_TOPIC_ALLOW",
        default=None,
        default_text="all topics",
        meaning="only partitions of matching topics are covered",
        parse=parse_regex,
        blank_is_unset=True,
    )
    topic_deny: re.Pattern | None = setting(
        "LAGMON_TOPIC_DENY",
        default=None,
        default_text="none",
        meaning="partitions of matching topics are left out",
        parse=parse_regex,
        blank_is_unset=True,
    )
    poll_interval_s: float = setting(
        "LAGMON_POLL_INTERVAL",
        default=10.0,
        default_text="`10s`",
        meaning="time between collector cycles",
        parse=parse_interval,
    )
    shard: Shard = setting(
        "LAGMON_SHARD",
        default=UNSHARDED,
        default_text="`1/1` (all groups)",
        meaning="the shard i/n of the groups this collector samples, or kafka: the groups Kafka assigns it",
        parse=parse_shard,
    )
    collectors_group: str = setting(
        "LAGMON_COLLECTORS_GROUP",
        default="",
        default_text="`lagmon-collectors-` and the cluster name",
        meaning="with LAGMON_SHARD=kafka: the consumer group the collectors of one cluster share the work in",
        blank_is_unset=True,
    )

    @property
    def group_filter(self) -> Filter:
        return Filter(self.group_allow, self.group_deny)

    @property
    def topic_filter(self) -> Filter:
        return Filter(self.topic_allow, self.topic_deny)


@dataclass(frozen=True)
class StoreSettings(Area):
    title: ClassVar[str] = "Storage"

    database_url: str = setting(
        "LAGMON_DATABASE_URL",
        default="sqlite:///lagmon.db",
        default_text="`sqlite:///lagmon.db`",
        meaning="SQLAlchemy URL of the store",
    )
    backlog_mb: int = setting(
        "LAGMON_STORE_BACKLOG_MB",
        default=256,
        default_text="`256`",
        meaning="memory for cycles the store cannot take yet",
        parse=whole_between(1, 65536),
    )


@dataclass(frozen=True)
class TailSettings(Area):
    """The __consumer_offsets tail (docs/architecture.md section 4)."""

    title: ClassVar[str] = "Offsets-topic tail"

    mode: TailMode = setting(
        "LAGMON_OFFSETS_TOPIC",
        default=TailMode.AUTO,
        default_text="`auto`",
        meaning="read __consumer_offsets: auto (when readable), on, off",
        parse=one_of(TailMode),
    )
    span_s: float = setting(
        "LAGMON_OFFSETS_TOPIC_SPAN",
        default=86400.0,
        default_text="`24h`",
        meaning="how far back the tail reads on its first start",
        parse=duration_between(1.0, 365 * 86400.0),
    )


@dataclass(frozen=True)
class HealthStageSettings(Area):
    """The collector's health step. How partitions are judged is the `evaluation:` block of the
    alert rules file (monitor.health.rules.HealthSettings), read with the rules."""

    title: ClassVar[str] = "Health"

    exact_top: int = setting(
        "LAGMON_LAG_EXACT_TOP",
        default=0,
        default_text="`0` (off)",
        meaning="exact lag seconds for the K partitions whose interpolated figure is least sure, each cycle",
        parse=whole_between(0, 1000),
    )


@dataclass(frozen=True)
class AlertSettings(Area):
    title: ClassVar[str] = "Alerts"

    rules_file: str | None = setting(
        "LAGMON_ALERTS_FILE",
        default=None,
        default_text="the shipped `monitor/alerts/default_rules.yaml`",
        meaning="alert rules, YAML or TOML",
        blank_is_unset=True,
    )
    channels: dict[str, str] = setting(
        "LAGMON_CHANNELS",
        default=dict,
        default_text="none",
        meaning="name=url,...: where alerts go (Apprise or Alertmanager URLs)",
        parse=parse_channels,
        secret=True,
    )
    dashboard_url: str | None = setting(
        "LAGMON_DASHBOARD_URL",
        default=None,
        default_text="none",
        meaning="the dashboard's base URL, for links in messages",
        blank_is_unset=True,
    )
    alertmanager_resend_s: float = setting(
        "LAGMON_ALERTMANAGER_RESEND",
        default=60.0,
        default_text="`1m`",
        meaning="how often firing alerts are posted to Alertmanager channels again",
        parse=duration_between(10.0, 3600.0),
    )
    silence_max_s: float = setting(
        "LAGMON_SILENCE_MAX",
        default=7 * 86400.0,
        default_text="`7d`",
        meaning="the longest a silence may last, from the CLI or the dashboard (at most `365d`)",
        parse=duration_between(60.0, 365 * 86400.0),
    )


@dataclass(frozen=True)
class MetricsSettings(Area):
    title: ClassVar[str] = "Metrics"

    port: int | None = setting(
        "LAGMON_METRICS_PORT",
        default=None,
        default_text="off",
        meaning="serve Prometheus /metrics on this port",
        parse=parse_port,
        blank_is_unset=True,
    )
    address: str = setting(
        "LAGMON_METRICS_ADDRESS", default="127.0.0.1", default_text="`127.0.0.1`", meaning="the address /metrics binds"
    )
    granularity: Granularity = setting(
        "LAGMON_METRICS_GRANULARITY",
        default=Granularity.PARTITION,
        default_text="`partition`",
        meaning="partition: every series; topic: none per partition, none with member labels",
        parse=one_of(Granularity),
    )


class LogFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


class LogLevel(enum.StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class LogSettings(Area):
    """How every command logs (monitor/logs.py): to stderr, UTC times, text or one JSON object per line."""

    title: ClassVar[str] = "Logs"

    format: LogFormat = setting(
        "LAGMON_LOG_FORMAT",
        default=LogFormat.TEXT,
        default_text="`text`",
        meaning="text, or json: one JSON object per line",
        parse=one_of(LogFormat),
    )
    level: LogLevel = setting(
        "LAGMON_LOG_LEVEL",
        default=LogLevel.INFO,
        default_text="`info`",
        meaning="the least level logged: debug, info, warning, error",
        parse=one_of(LogLevel),
    )


@dataclass(frozen=True)
class DashboardSettings(Area):
    title: ClassVar[str] = "Dashboard"

    refresh_s: float = setting(
        "LAGMON_DASHBOARD_REFRESH",
        default=5.0,
        default_text="`5s`",
        meaning="default live refresh interval and cache time (1s to 1h)",
        parse=duration_between(1.0, 3600.0),
    )
    anonymous_writes: bool = setting(
        "LAGMON_DASHBOARD_ANONYMOUS_WRITES",
        default=False,
        default_text="off",
        meaning="on (1, true) lets anyone who reaches the dashboard acknowledge and silence as a typed name (no login)",
        parse=parse_flag,
    )


@dataclass(frozen=True)
class SparkSettings(Area):
    """The analysis job and its session; under spark-submit its own options win where they overlap."""

    title: ClassVar[str] = "Spark analysis"

    master: str | None = setting(
        "LAGMON_SPARK_MASTER",
        default=None,
        default_text="`local[*]` (under spark-submit: its `--master`)",
        meaning="Spark master (under spark-submit: its --master)",
        blank_is_unset=True,
    )
    history_dir: str = setting(
        "LAGMON_HISTORY_DIR",
        default=".lagmon/history",
        default_text="`.lagmon/history`",
        meaning="the Parquet history: a path or a URI",
        blank_is_unset=True,
    )
    jdbc_jars: str | None = setting(
        "LAGMON_SPARK_JDBC_JARS",
        default=None,
        default_text=(
            "Debian's driver for the store: `/usr/share/java/sqlite-jdbc.jar` or `/usr/share/java/postgresql.jar`"
        ),
        meaning="JDBC driver jar(s) for reading the store",
        blank_is_unset=True,
    )
    shuffle_partitions: int = setting(
        "LAGMON_SPARK_SHUFFLE_PARTITIONS",
        default=8,
        default_text="`8`",
        meaning="the most shuffle partitions of an analysis step (one per 4 MiB it reads; 1: no adaptive execution)",
        parse=whole_between(1, 10000),
    )
    driver_memory: str | None = setting(
        "LAGMON_SPARK_DRIVER_MEMORY",
        default=None,
        default_text="a quarter of the RAM, 1g to 4g",
        meaning="heap of the driver JVM",
        parse=parse_driver_memory,
        blank_is_unset=True,
    )
    driver_quick_jit: bool | None = setting(
        "LAGMON_SPARK_DRIVER_QUICK_JIT",
        default=None,
        default_text="auto",
        meaning="on (1, true) runs the driver JVM on the quick compiler only (`-XX:TieredStopAtLevel=1`), off on "
        "both compilers; auto: on for one small run (`--once`, at most 800,000 rows not yet analysed, no "
        "--since/--until), which then ends sooner; an `--every` or a big run is paid back by optimised code; "
        "the tests turn it on",
        parse=parse_flag_or_auto,
    )
    ui: bool = setting(
        "LAGMON_SPARK_UI",
        default=False,
        default_text="off",
        meaning="on (1, true) turns Spark's web UI on",
        parse=parse_flag,
    )
    log_level: str = setting(
        "LAGMON_SPARK_LOG_LEVEL",
        default="WARN",
        default_text="`WARN`",
        meaning="Spark's log level",
        parse=parse_spark_log_level,
    )


@dataclass(frozen=True)
class ImageSettings(Area):
    """Read by the container image's scripts, not by Python: declared so the reference page and
    the scripts' defaults are tested against one list."""

    title: ClassVar[str] = "Container image"

    role: str = setting(
        "LAGMON_ROLE",
        default="collect",
        default_text="set by the entrypoint",
        meaning="the role the container runs (the health check's, without a role file)",
        read_by="docker/healthcheck.sh",
    )
    role_file: str = setting(
        "LAGMON_ROLE_FILE",
        default="/tmp/lagmon-role",
        default_text="`/tmp/lagmon-role`",
        meaning="where the entrypoint records the role and its options for the health check",
        read_by="docker/entrypoint.sh",
    )
    dashboard_address: str = setting(
        "LAGMON_DASHBOARD_ADDRESS",
        default="0.0.0.0",
        default_text="`0.0.0.0` in the image",
        meaning="address the dashboard role binds",
        read_by="docker/entrypoint.sh",
    )
    dashboard_port: str = setting(
        "LAGMON_DASHBOARD_PORT",
        default="8501",
        default_text="`8501`",
        meaning="port of the dashboard role",
        read_by="docker/entrypoint.sh",
    )
    analyze_every: str = setting(
        "LAGMON_ANALYZE_EVERY",
        default="5m",
        default_text="`5m`",
        meaning="how often the analyze role runs",
        read_by="docker/entrypoint.sh",
    )


@dataclass(frozen=True)
class DevelopmentSettings(Area):
    """The local dev cluster of the demo, the tests and the benchmarks."""

    title: ClassVar[str] = "Development only"

    kafka_libs: Path = setting(
        "LAGMON_KAFKA_LIBS",
        default=PROJECT_DIR / "kafka" / "libs",
        default_text="`kafka/libs` of the repository",
        meaning="where the dev cluster finds Kafka's jars",
        parse=lambda text, _: Path(text),
        blank_is_unset=True,
    )
    devcluster_heap: str = setting(
        "LAGMON_DEVCLUSTER_HEAP",
        default="384m",
        default_text="`384m`",
        meaning="heap of each dev-cluster node",
        parse=parse_jvm_size,
    )
    devcluster_quick_jit: bool = setting(
        "LAGMON_DEVCLUSTER_QUICK_JIT",
        default=False,
        default_text="off",
        meaning="on (1, true) runs dev-cluster nodes on the JVM's quick compiler only "
        "(`-XX:TieredStopAtLevel=1`): half the CPU to start and a third less idle, slower under load; "
        "the tests turn it on",
        parse=parse_flag,
    )


AREAS: tuple[type[Area], ...] = (
    KafkaSettings,
    CollectorSettings,
    StoreSettings,
    TailSettings,
    HealthStageSettings,
    AlertSettings,
    MetricsSettings,
    LogSettings,
    DashboardSettings,
    SparkSettings,
    ImageSettings,
    DevelopmentSettings,
)


@dataclass(frozen=True)
class Settings:
    """What the collector and the read commands load: a broken one of these stops any of them."""

    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    collector: CollectorSettings = field(default_factory=CollectorSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    tail: TailSettings = field(default_factory=TailSettings)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Settings from `env` (default os.environ); raises ConfigError naming the bad variable."""
    env = os.environ if env is None else env
    return Settings(
        KafkaSettings.from_env(env),
        CollectorSettings.from_env(env),
        StoreSettings.from_env(env),
        TailSettings.from_env(env),
    )
