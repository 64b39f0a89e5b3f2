"""One local SparkSession for every Spark test (starting one takes ~10 s), marked `spark`."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/spark/" in str(item.fspath):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    from monitor.config import SparkSettings, StoreSettings
    from spark.session import build_session

    session = build_session(
        SparkSettings.from_env(),
        StoreSettings.from_env().database_url,
        {
            "spark.master": "local[2]",
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.sql.adaptive.enabled": "false",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
        },
    )
    yield session
    session.stop()
