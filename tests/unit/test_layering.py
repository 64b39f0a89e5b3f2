"""The import rules of DESIGN.md section 2, checked by parsing every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_CORES = [
    "monitor/models.py",
    "monitor/events.py",
    "monitor/config.py",
    "monitor/output.py",
    "monitor/health/rules.py",
    "monitor/health/engine.py",
    "monitor/health/report.py",
    "monitor/lag.py",
    "monitor/alerts/rules.py",
    "monitor/alerts/lifecycle.py",
    "monitor/alerts/message.py",
    "monitor/shard.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "monitor/offsets_topic").glob("*.py")),
]


def imports_of(path: Path, top_level_only: bool = False) -> set[str]:
    """Module names `path` imports (top-level statements only when asked: lazy imports are allowed)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def test_only_the_kafka_edge_imports_confluent_kafka():
    """monitor/kafka.py is the one place that talks to Kafka; the workload generator is not the monitor."""
    offenders = [
        str(p.relative_to(ROOT))
        for p in python_files("monitor")
        if any(n.split(".")[0] == "confluent_kafka" for n in imports_of(p))
        and p.name != "kafka.py"
        and "monitor/sim" not in str(p)
    ]
    assert offenders == []


@pytest.mark.parametrize("module", PURE_CORES)
def test_pure_cores_do_no_io(module):
    forbidden = {
        "confluent_kafka",
        "sqlalchemy",
        "pyspark",
        "streamlit",
        "requests",
        "apprise",
        "monitor.store",
        "monitor.kafka",
        "monitor.collector",
    }
    used = {n for n in imports_of(ROOT / module) if n in forbidden or n.split(".")[0] in forbidden}
    assert used == set()


def test_models_imports_nothing_of_lagmon():
    assert {n for n in imports_of(ROOT / "monitor/models.py") if n.startswith("monitor")} == set()


def test_the_store_imports_nothing_of_the_parts_that_use_it():
    """The store is an edge: alerts, health and the collector import it, never the other way round."""
    bad = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in python_files("monitor/store")
        for n in imports_of(p)
        if n.split(".")[:2] in (["monitor", "alerts"], ["monitor", "health"], ["monitor", "collector"])
    ]
    assert bad == []


def test_monitor_never_imports_the_ui_and_spark_only_lazily():
    bad = []
    for path in python_files("monitor"):
        for name in imports_of(path):
            if name.split(".")[0] in ("app_pages", "app"):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
        for name in imports_of(path, top_level_only=True):
            if name.split(".")[0] in ("spark", "pyspark"):
                bad.append(f"{path.relative_to(ROOT)} imports {name} at module level")
    assert bad == []


def test_spark_imports_only_the_allowed_parts_of_monitor():
    allowed = {"monitor.models", "monitor.config", "monitor.store", "monitor.lag", "monitor.stopping"}
    bad = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in python_files("spark")
        for n in imports_of(p)
        if n.startswith("monitor") and not any(n == a or n.startswith(a + ".") for a in allowed)
    ]
    assert bad == []


def test_spark_session_is_built_in_one_place():
    """spark/session.py is the only SparkSession builder (DESIGN.md section 2): one set of settings everywhere."""
    builders = [
        str(p.relative_to(ROOT))
        for p in python_files("spark", "monitor", "bench")
        if "SparkSession.builder" in p.read_text()
    ]
    assert builders == ["spark/session.py"]
