"""The settings tree's loaders: strict parsing that names the variable, blanks, secrets, the Kafka family."""

from __future__ import annotations

import pytest

from monitor.config import (
    AlertSettings,
    DashboardSettings,
    DevelopmentSettings,
    HealthStageSettings,
    ImageSettings,
    KafkaSettings,
    MetricsSettings,
    SparkSettings,
    StoreSettings,
    load_settings,
)
from monitor.models import ConfigError
from monitor.store import DEFAULT_URL


def test_the_defaults_are_the_documented_ones():
    settings = load_settings({})
    assert settings.kafka.cluster_name == "default" and settings.kafka.cluster is None
    assert settings.collector.poll_interval_s == 10.0
    assert settings.store.database_url == DEFAULT_URL == StoreSettings().database_url
    assert (HealthStageSettings.from_env({}).exact_top, MetricsSettings.from_env({}).port) == (0, None)
    assert MetricsSettings.from_env({}).address == "127.0.0.1"
    assert DashboardSettings.from_env({}).refresh_s == 5.0
    assert DashboardSettings.from_env({}).anonymous_writes is False
    assert DevelopmentSettings.from_env({}).devcluster_heap == "384m"


def test_the_kafka_config_is_the_file_then_the_variables_then_the_bootstrap(tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("# comment\nsecurity.protocol=SASL_SSL\nsasl.password=from-file\nbootstrap.servers=f:1\n")
    kafka = KafkaSettings.from_env(
        {
            "LAGMON_KAFKA_CONFIG": str(props),
            "LAGMON_KAFKA_SASL_PASSWORD": "from-env",
            "LAGMON_KAFKA_LIBS": "/not/a/librdkafka/setting",
            "LAGMON_BOOTSTRAP_SERVERS": "b:9092",
        }
    )
    assert kafka.librdkafka_config() == {
        "security.protocol": "SASL_SSL",
        "sasl.password": "from-env",
        "bootstrap.servers": "b:9092",
    }
    assert kafka.redacted_kafka_config()["sasl.password"] == "***"
    assert "from-env" not in repr(kafka) and "from-file" not in repr(kafka)


def test_channel_urls_stay_out_of_the_repr():
    alerts = AlertSettings.from_env({"LAGMON_CHANNELS": "ops=slack://secret-token/B/C"})
    assert alerts.channels == {"ops": "slack://secret-token/B/C"}
    assert "secret-token" not in repr(alerts)


@pytest.mark.parametrize(
    "area, variable, field",
    [
        (KafkaSettings, "LAGMON_BOOTSTRAP_SERVERS", "bootstrap_servers"),
        (MetricsSettings, "LAGMON_METRICS_PORT", "port"),
        (AlertSettings, "LAGMON_ALERTS_FILE", "rules_file"),
    ],
)
def test_a_blank_optional_setting_is_unset(area, variable, field):
    assert getattr(area.from_env({variable: ""}), field) is None


@pytest.mark.parametrize(
    "load, variable, value, message",
    [
        (load_settings, "LAGMON_CLUSTER_NAME", " ", "LAGMON_CLUSTER_NAME: must not be empty"),
        (load_settings, "LAGMON_POLL_INTERVAL", "", "LAGMON_POLL_INTERVAL: '' is not a duration"),
        (load_settings, "LAGMON_POLL_INTERVAL", "0.0000001ms", "LAGMON_POLL_INTERVAL: '0.0000001ms' is less than"),
        (load_settings, "LAGMON_POLL_INTERVAL", "2d", "LAGMON_POLL_INTERVAL: '2d' is more than 1h"),
        (load_settings, "LAGMON_GROUP_ALLOW", "(", "LAGMON_GROUP_ALLOW: '(' is not a valid regular expression"),
        (load_settings, "LAGMON_TOPIC_DENY", "[", "LAGMON_TOPIC_DENY: '[' is not a valid regular expression"),
        (load_settings, "LAGMON_KAFKA_CONFIG", "/nonexistent.properties", "LAGMON_KAFKA_CONFIG: cannot read"),
        (HealthStageSettings.from_env, "LAGMON_LAG_EXACT_TOP", "ten", "LAGMON_LAG_EXACT_TOP: 'ten' is not a whole"),
        (MetricsSettings.from_env, "LAGMON_METRICS_PORT", "93o8", "LAGMON_METRICS_PORT: '93o8' is not a port number"),
        (MetricsSettings.from_env, "LAGMON_METRICS_PORT", "70000", "LAGMON_METRICS_PORT: '70000' is not a port"),
        (AlertSettings.from_env, "LAGMON_CHANNELS", "ops", "LAGMON_CHANNELS: item 1 is not name=scheme://"),
        (DashboardSettings.from_env, "LAGMON_DASHBOARD_REFRESH", "often", "LAGMON_DASHBOARD_REFRESH: 'often' is"),
        (DashboardSettings.from_env, "LAGMON_DASHBOARD_REFRESH", "0.5ms", "LAGMON_DASHBOARD_REFRESH: '0.5ms' is less"),
        (DevelopmentSettings.from_env, "LAGMON_DEVCLUSTER_HEAP", "lots", "LAGMON_DEVCLUSTER_HEAP: 'lots' is not"),
        # documented bounds (docs/configuration.md): past them a value is a typo, not a setting
        (load_settings, "LAGMON_STORE_BACKLOG_MB", "0", "LAGMON_STORE_BACKLOG_MB: 0 is not from 1 to 65536"),
        (load_settings, "LAGMON_STORE_BACKLOG_MB", "9" * 12, "LAGMON_STORE_BACKLOG_MB: 999999999999 is not from"),
        (load_settings, "LAGMON_OFFSETS_TOPIC_SPAN", "400d", "LAGMON_OFFSETS_TOPIC_SPAN: '400d' is more than 365d"),
        (HealthStageSettings.from_env, "LAGMON_LAG_EXACT_TOP", "5000", "LAGMON_LAG_EXACT_TOP: 5000 is not from 0 to"),
        (
            AlertSettings.from_env,
            "LAGMON_ALERTMANAGER_RESEND",
            "2h",
            "LAGMON_ALERTMANAGER_RESEND: '2h' is more",
        ),
        (AlertSettings.from_env, "LAGMON_SILENCE_MAX", "2y", "LAGMON_SILENCE_MAX: '2y' is not a duration"),
        (AlertSettings.from_env, "LAGMON_SILENCE_MAX", "400d", "LAGMON_SILENCE_MAX: '400d' is more than 365d"),
        (
            DashboardSettings.from_env,
            "LAGMON_DASHBOARD_REFRESH",
            "2h",
            "LAGMON_DASHBOARD_REFRESH: '2h' is more",
        ),
        (SparkSettings.from_env, "LAGMON_SPARK_SHUFFLE_PARTITIONS", "0", "LAGMON_SPARK_SHUFFLE_PARTITIONS: 0 is not"),
    ],
)
def test_a_malformed_value_is_one_error_naming_the_variable(load, variable, value, message):
    with pytest.raises(ConfigError) as info:
        load({variable: value})
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "yes", "on", " True "])
def test_a_flag_is_on_as_an_sre_writes_it(text):
    assert DashboardSettings.one_from_env("anonymous_writes", {"LAGMON_DASHBOARD_ANONYMOUS_WRITES": text}) is True


@pytest.mark.parametrize("text", ["", "0", "false", "False", "no", "off"])
def test_a_flag_is_off_as_an_sre_writes_it(text):
    assert DashboardSettings.one_from_env("anonymous_writes", {"LAGMON_DASHBOARD_ANONYMOUS_WRITES": text}) is False


def test_the_dashboard_refreshes_at_most_once_a_second():
    """Less would hammer the database (and under a millisecond, the page's time window divided by zero)."""
    assert DashboardSettings.from_env({"LAGMON_DASHBOARD_REFRESH": "1s"}).refresh_s == 1.0
    with pytest.raises(ConfigError, match=r"^LAGMON_DASHBOARD_REFRESH: '999ms' is less than 1s$"):
        DashboardSettings.from_env({"LAGMON_DASHBOARD_REFRESH": "999ms"})


def test_one_field_is_read_without_the_others_of_its_area():
    env = {"LAGMON_DASHBOARD_REFRESH": "often", "LAGMON_DASHBOARD_ANONYMOUS_WRITES": "1"}
    assert DashboardSettings.one_from_env("anonymous_writes", env) is True  # the bad refresh is not its problem
    assert DashboardSettings.one_from_env("anonymous_writes", {}) is False
    with pytest.raises(ConfigError, match="LAGMON_DASHBOARD_REFRESH: 'often'"):
        DashboardSettings.one_from_env("refresh_s", env)


def test_the_image_settings_are_not_read_by_python():
    assert ImageSettings.from_env({"LAGMON_DASHBOARD_PORT": "not used"}) == ImageSettings()
