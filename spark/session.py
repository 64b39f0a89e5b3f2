"""The only SparkSession builder: local by default, any master unchanged.

Settings come from the environment so `spark-submit --master ...` and
`python -m monitor analyze` behave alike: LAGMON_SPARK_MASTER (default
local[*]), LAGMON_SPARK_UI=1 to get the web UI back. The SQLite JDBC driver
(Debian's libxerial-sqlite-jdbc-java) is put on the driver's and executors'
class path. Driver host 127.0.0.1 only in local mode: a cluster must reach
the driver by its real address.
"""
from __future__ import annotations

import os

SQLITE_JDBC_JAR = "/usr/share/java/sqlite-jdbc.jar"
DEFAULT_MASTER = "local[*]"


def build_session_config(env: dict[str, str] | None = None) -> dict[str, str]:
    """The Spark settings lagmon wants, as plain strings (pure, for tests and the builder)."""
    env = os.environ if env is None else env
    master = env.get("LAGMON_SPARK_MASTER", DEFAULT_MASTER)
    jar = env.get("LAGMON_SPARK_JDBC_JARS", SQLITE_JDBC_JAR)
    conf = {
        "spark.master": master,
        "spark.app.name": "lagmon-analyze",
        "spark.jars": jar,
        "spark.driver.extraClassPath": jar,
        "spark.ui.enabled": "true" if env.get("LAGMON_SPARK_UI") == "1" else "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",  # lagmon prints its own stages
        "spark.sql.shuffle.partitions": env.get("LAGMON_SPARK_SHUFFLE_PARTITIONS", "8"),
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.adaptive.enabled": "true",
    }
    if master.startswith("local"):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


def build_session(extra: dict[str, str] | None = None):
    """A SparkSession (getOrCreate: spark-submit's own session is reused) with quiet logs."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in {**build_session_config(), **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("LAGMON_SPARK_LOG_LEVEL", "WARN"))
    return spark
