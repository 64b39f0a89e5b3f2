"""lagmon's settings: LAGMON_* variables (and a librdkafka properties file) as one tree of areas.

Parsing is strict: a malformed value is a ConfigError that names the variable, so a
broken deployment fails at start rather than running with a silent default. Secret
values (passwords, tokens, channel URLs) are kept out of every repr and message.
The tree is in areas.py, the declaration of a setting in tree.py, the value parsers
in parse.py; this package is the only reader of the environment.
"""

from monitor.config.areas import (
    AREAS,
    AlertSettings,
    CollectorSettings,
    DashboardSettings,
    DevelopmentSettings,
    HealthStageSettings,
    ImageSettings,
    KafkaSettings,
    LogSettings,
    MetricsSettings,
    Settings,
    SparkSettings,
    StoreSettings,
    TailSettings,
    load_settings,
)
from monitor.config.parse import (
    is_secret,
    parse_channels,
    parse_duration,
    parse_interval,
    parse_port,
    parse_time,
    read_properties,
    silence_end,
)
from monitor.config.tree import Area, Setting, declared
from monitor.models import ConfigError

__all__ = [
    "AREAS",
    "AlertSettings",
    "Area",
    "CollectorSettings",
    "ConfigError",
    "DashboardSettings",
    "DevelopmentSettings",
    "HealthStageSettings",
    "ImageSettings",
    "KafkaSettings",
    "LogSettings",
    "MetricsSettings",
    "Setting",
    "Settings",
    "SparkSettings",
    "StoreSettings",
    "TailSettings",
    "declared",
    "is_secret",
    "load_settings",
    "parse_channels",
    "parse_duration",
    "parse_interval",
    "parse_port",
    "parse_time",
    "read_properties",
    "silence_end",
]
