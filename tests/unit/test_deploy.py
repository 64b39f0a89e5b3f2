"""deploy/: the Grafana dashboards and Prometheus rules fit the exporter and each other (their PromQL
against a real Prometheus is tests/integration/test_prometheus.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from monitor.exporter import ExporterState, compute_exposition

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARDS = {path.stem: json.loads(path.read_text()) for path in sorted((DEPLOY / "grafana").glob("*.json"))}
RULES = yaml.safe_load((DEPLOY / "prometheus" / "lagmon-rules.yml").read_text())
OWN_METRIC = re.compile(r"\b((?:kafka|lagmon)_[a-z_]+)\b")


def exported_names() -> set[str]:
    return {line.split()[2] for line in compute_exposition(ExporterState("c")) if line.startswith("# HELP")}


def all_exprs() -> list[str]:
    exprs = [rule["expr"] for group in RULES["groups"] for rule in group["rules"]]
    for board in DASHBOARDS.values():
        exprs += [v["definition"] for v in board["templating"]["list"] if v["type"] == "query"]
        exprs += [t["expr"] for p in board["panels"] for t in p["targets"]]
    return exprs


def test_the_three_dashboards_are_there_with_their_variables():
    assert {name: [v["name"] for v in board["templating"]["list"]] for name, board in DASHBOARDS.items()} == {
        "lagmon-overview": ["datasource", "cluster", "group"],
        "lagmon-group": ["datasource", "cluster", "group"],
        "lagmon-collector": ["datasource", "cluster"],
    }
    assert {board["uid"] for board in DASHBOARDS.values()} == set(DASHBOARDS)


def test_rules_and_dashboards_use_only_metrics_the_exporter_serves():
    used = {name for expr in all_exprs() for name in OWN_METRIC.findall(expr)}
    assert used and used <= exported_names(), used - exported_names()


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_panel_asks_the_chosen_data_source(name):
    for panel in DASHBOARDS[name]["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"] and all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_panels_have_their_own_ids_and_do_not_overlap(name):
    panels = DASHBOARDS[name]["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = [(p["title"], x, y) for p in panels for x, y in cells_of(p["gridPos"])]
    assert len({(x, y) for _, x, y in cells}) == len(cells)
    assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in panels)


def cells_of(grid: dict) -> list[tuple[int, int]]:
    return [(x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])]


def test_alert_dashboard_links_open_dashboards_that_exist():
    links = [
        r["annotations"]["dashboard"] for g in RULES["groups"] for r in g["rules"] if "dashboard" in r["annotations"]
    ]
    assert links
    for link in links:
        uid = re.match(r"/d/([\w-]+)/", link).group(1)
        assert uid in DASHBOARDS, link
        wanted = set(re.findall(r"var-(\w+)=", link))
        assert wanted <= {v["name"] for v in DASHBOARDS[uid]["templating"]["list"]}, link


def test_every_alert_says_how_bad_it_is_and_what_happened():
    for group in RULES["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
