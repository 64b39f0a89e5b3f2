"""Fixtures every test layer may use: real Kafka clusters and a PostgreSQL server, started once per
session (only if a test asks) and always stopped, and unique names.

Where the rest lives:
- each layer's own fixtures: that folder's conftest.py (tests/db, tests/ui, tests/spark);
- helpers, plain modules imported by name (`from harness import wait_for`; pytest.ini's
  `pythonpath`): tests/support/: factories.py (builders of test data shared across layers),
  harness.py (drive real processes: wait, run the CLI, read the chat hook), dashboard_seed.py,
  kafka_setup.py, alertmanager_server.py and the rest, each saying what it is for;
- the few helpers the benchmarks share with the tests (kafka_wire, kafka_cli, scenario_watch,
  spark_cluster, pg_server): bench/, which owns them, as a benchmark imports nothing from tests/.
"""

from __future__ import annotations

import collections
import functools
import os
import uuid
from pathlib import Path

import pg_server
import pytest

# Dev-cluster nodes on the JVM's quick compiler: half the CPU to start, a third less idle (docs/development.md).
# Set before monitor.devcluster reads its settings, and inherited by every process the tests start.
os.environ.setdefault("LAGMON_DEVCLUSTER_QUICK_JIT", "1")
# Spark drivers as a small collector box runs them (1g heap, so the serial collector): the test stores are small, and
# tests/spark ran in 175 s instead of 193 s with a 24 GiB machine's default 4g and G1 (two workers, one run each).
os.environ.setdefault("LAGMON_SPARK_DRIVER_MEMORY", "1g")
# and on the quick compiler: tests/spark took 110 CPU-s of JVMs instead of 135, 155 s instead of 139 (one process).
os.environ.setdefault("LAGMON_SPARK_DRIVER_QUICK_JIT", "1")
from monitor import devcluster


def pytest_collection_modifyitems(config, items):
    """Tests under tests/integration/ need a real broker: mark them so `-m` can select them. The files that
    start real processes run first, most tests first, the in-process ones (unit, db, ui) last: xdist hands out
    files in collection order, and short files at the end fill the gaps where a long one would keep one
    worker busy after the others are done (with xdist's order, most tests first, two one-test files did so
    for ~90 s: docs/development.md)."""
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
    sizes = collections.Counter(work_unit(config, item.nodeid) for item in items)

    def order(item) -> tuple[bool, int, str]:
        unit = work_unit(config, item.nodeid)
        return unit.startswith(IN_PROCESS), -sizes[unit], unit

    items.sort(key=order)  # stable: a file's tests keep their order


IN_PROCESS = ("tests/unit/", "tests/db/", "tests/ui/")


def work_unit(config, nodeid: str) -> str:
    """What one xdist worker runs whole: a file, all of tests/spark (one Spark session), or every file
    that uses the 3-node cluster (so only one worker starts it, ~80 CPU-s with its brokers idling)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/spark/"):
        return "tests/spark/ (the Spark session)"
    return "the 3-node cluster" if uses_kafka3(config.rootpath / path) else path


def pytest_xdist_make_scheduler(config, log):
    """`make test`'s workers take a work unit each at a time, in collection order (see above)."""
    from xdist.scheduler import LoadFileScheduling

    class WorkUnitsInCollectionOrder(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(config, nodeid)

    config.option.loadscopereorder = False  # xdist's own order puts files with one long test last
    return WorkUnitsInCollectionOrder(config, log)


@functools.cache
def uses_kafka3(test_file: Path) -> bool:
    return "kafka3" in test_file.read_text()


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """A real single-node KRaft cluster for the whole session."""
    cluster_dir = tmp_path_factory.mktemp("kafka1")
    cluster = devcluster.start(cluster_dir, nodes=1)
    yield cluster
    devcluster.destroy(cluster_dir)


@pytest.fixture(scope="session")
def kafka3(tmp_path_factory):
    """A real 3-node KRaft cluster, only for tests that need failover."""
    cluster_dir = tmp_path_factory.mktemp("kafka3")
    cluster = devcluster.start(cluster_dir, nodes=3)
    yield cluster
    devcluster.destroy(cluster_dir)


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the whole session, started only if a test asks for it."""
    server = pg_server.start()
    yield server
    pg_server.stop(server)


@pytest.fixture
def unique():
    """A short unique suffix for topic and group names, so tests never collide."""
    return uuid.uuid4().hex[:8]
