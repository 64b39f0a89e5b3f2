"""The dashboard's side of docs/architecture.md section 1: it reads the store and never talks to Kafka or migrates."""

from __future__ import annotations

import ast
from pathlib import Path

from test_layering import ROOT, imports_of

UI_FILES = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]


def test_the_ui_never_talks_to_kafka_or_runs_the_collector():
    forbidden = ("confluent_kafka", "monitor.kafka", "monitor.collector", "monitor.sim", "monitor.devcluster")
    bad = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in UI_FILES
        for n in imports_of(p)
        if any(n == f or n.startswith(f + ".") for f in forbidden)
    ]
    assert bad == []


# docs/architecture.md section 1: the UI writes nothing but alert acknowledgements and silences.
ALLOWED_WRITES = {"write_ack", "write_silence", "write_silence_end"}


def names_used(path: Path) -> set[str]:
    """Every attribute and bare name `path` mentions (calls through a module alias included)."""
    tree = ast.parse(path.read_text())
    return (
        {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        | {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    )


def test_the_ui_never_migrates_and_writes_only_acks_and_silences():
    bad = [
        str(p.relative_to(ROOT))
        for p in UI_FILES
        if any(
            word in Path(p).read_text()
            for word in ("upgrade(", "Store(", "write_engine(", ".execute(", "exec_driver_sql")
        )
    ]
    assert bad == []
    writes = {
        f"{p.relative_to(ROOT)}: {name}"
        for p in UI_FILES
        for name in names_used(p)
        if name.startswith("write_") and name not in ALLOWED_WRITES
    }
    assert writes == set()
    assert not any(n.startswith("monitor.store.writer") for p in UI_FILES for n in imports_of(p))


def test_the_allowed_writes_touch_only_the_alert_tables():
    """write_ack/write_silence/write_silence_end change rows of `alerts` and `alert_silences`, nothing else."""
    source = (ROOT / "monitor/store/alerts.py").read_text()
    tree = ast.parse(source)
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ALLOWED_WRITES):
        tables = {
            n.value.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Attribute)
            and n.attr in ("insert", "update", "delete")
            and isinstance(n.value, ast.Name)
        }
        assert tables and tables <= {"alerts", "alert_silences"}, (fn.name, tables)


def test_charts_and_reports_are_pure():
    for module in ("app_pages/charts.py", "app_pages/incident.py"):
        used = {
            n
            for n in imports_of(ROOT / module)
            if n.split(".")[0] in ("streamlit", "sqlalchemy", "monitor") and n != "monitor.models"
        }
        assert used == set(), module
