"""The dashboard's side of DESIGN.md section 2: it reads the store and never talks to Kafka or migrates."""
from __future__ import annotations

from pathlib import Path

from test_layering import ROOT, imports_of

UI_FILES = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]


def test_the_ui_never_talks_to_kafka_or_runs_the_collector():
    forbidden = ("confluent_kafka", "monitor.kafka", "monitor.collector", "monitor.sim", "monitor.devcluster")
    bad = [f"{p.relative_to(ROOT)} imports {n}" for p in UI_FILES for n in imports_of(p)
           if any(n == f or n.startswith(f + ".") for f in forbidden)]
    assert bad == []


def test_the_ui_never_migrates_or_writes():
    bad = [str(p.relative_to(ROOT)) for p in UI_FILES
           if any(word in Path(p).read_text() for word in ("upgrade(", "Store(", "write_engine("))]
    assert bad == []


def test_charts_and_reports_are_pure():
    for module in ("monitor/charts.py", "monitor/incident.py"):
        used = {n for n in imports_of(ROOT / module) if n.split(".")[0] in ("streamlit", "sqlalchemy", "monitor")
                and n != "monitor.models"}
        assert used == set(), module
