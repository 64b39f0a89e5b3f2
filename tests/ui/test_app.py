"""Every dashboard page through streamlit.testing.v1.AppTest on a seeded database.

The seed (tests/dashboard_seed.py) is written through the real Store and the
real snapshot diff; expected numbers come from the seed's final snapshot.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard_seed import HTML_GROUP, STEP_MS, seed
from monitor.store import Store, make_engine, upgrade

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'ui.db'}"
    engine = make_engine(url)
    upgrade(engine)
    info = seed(Store(engine), int(datetime.now(timezone.utc).timestamp() * 1000))
    engine.dispose()
    previous = os.environ.get("LAGMON_DATABASE_URL")
    os.environ["LAGMON_DATABASE_URL"] = url
    yield info
    if previous is None:
        del os.environ["LAGMON_DATABASE_URL"]
    else:
        os.environ["LAGMON_DATABASE_URL"] = previous


def open_app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert [e.value for e in at.exception] == []
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def total_lag(info, group: str) -> int:
    g = info.final.groups[group]
    return sum(info.final.partitions[tp].log_end - c for tp, c in g.committed.items())


def test_overview_lists_every_group_with_its_lag_and_cluster_totals(seeded):
    at = open_app()
    assert metrics(at) == {
        "Groups": "4", "Stable": "2", "Rebalancing": "1",
        "Total lag (offsets)": f"{sum(total_lag(seeded, g) for g in seeded.final.groups):,}",
        "Rebalances in the last hour": "3",
    }
    df = at.dataframe[0].value.set_index("group")
    assert df.loc["orders-app", "total lag"] == total_lag(seeded, "orders-app")
    assert df.loc["orders-app", "rebalances (1h)"] == 2
    assert df.loc["kip-app", "state"] == "Reconciling (inferred)"
    assert df.loc[HTML_GROUP, "state"] == "Empty"  # the HTML-looking name is a plain cell value
    assert len(df.loc["orders-app", "lag trend"]) == 20
    assert dict(at.query_params) == {"cluster": "prod", "range": "1h"}


def test_overview_search_and_lagging_filter(seeded):
    at = open_app()
    at.text_input(key="ov_search").set_value("APP").run()
    assert sorted(at.dataframe[0].value["group"]) == ["kip-app", "orders-app"]
    at.text_input(key="ov_search").set_value("").run()
    at.toggle(key="ov_lagging").set_value(True).run()
    assert "billing" not in set(at.dataframe[0].value["group"])


def test_alert_link_opens_the_group_page_and_range(seeded):
    at = open_app(page="group", group="orders-app", range="15m")
    assert at.selectbox(key="gp_group").value == "orders-app"
    assert at.session_state["range"] == "15m"
    m = metrics(at)
    assert (m["State"], m["Members"], m["Total lag"], m["Coordinator (id)"]) == (
        "Stable", "2", f"{total_lag(seeded, 'orders-app'):,}", "1")
    parts = at.dataframe[0].value
    assert list(parts["lag"]) == [seeded.final.partitions[tp].log_end - c
                                  for tp, c in sorted(seeded.final.groups["orders-app"].committed.items())]
    assert list(parts["client id"]) == ["orders-1", "orders-1", "orders-2", "orders-2"]
    assert len(at.get("vega_lite_chart")) == 1


def test_group_page_marks_an_inferred_kip848_state(seeded):
    at = open_app(page="group", group="kip-app")
    assert metrics(at)["State"] == "Reconciling *"
    assert any("librdkafka reports Assigning/Reconciling as Unknown" in c.value for c in at.caption)


def test_rebalances_page_counts_the_groups_rebalances_and_offers_the_report(seeded):
    at = open_app(page="rebalances", group="orders-app", range="1h")
    assert metrics(at) == {"Rebalances": "2", "Groups": "1", "Longest": f"{2 * STEP_MS / 1000:.1f} s",
                           "Partitions moved": "2"}
    details = at.dataframe[0].value
    assert list(details["trigger"]) == ["member_joined", "member_left"]
    assert list(details["who joined"]) == ["orders-3", ""]
    # timeline, ownership heatmap and lag, each over the whole window
    charts = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    x_domains = {json.dumps((c.get("encoding") or c["layer"][0]["encoding"])["x"]["scale"]["domain"])
                 for c in charts}
    assert len(charts) == 3 and len(x_domains) == 1
    assert "trigger:     member_left" in at.text[0].value


def test_custom_range_from_the_url_narrows_the_window(seeded):
    def iso(ms):
        return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat()
    start, end = seeded.first_at + 50 * STEP_MS, seeded.first_at + 100 * STEP_MS  # only the join
    at = open_app(page="rebalances", range="custom", **{"from": iso(start), "to": iso(end)})
    assert metrics(at)["Rebalances"] == "1"


def test_topics_page_lists_topics_and_their_readers(seeded):
    at = open_app(page="topics")
    topics = at.dataframe[0].value.set_index("topic")
    assert topics.loc["orders", "partitions"] == 4 and topics.loc["events", "groups"] == 2
    at.selectbox(key="tp_topic").set_value("orders").run()
    readers = at.dataframe[2].value
    assert readers.to_dict("records") == [{"group": "orders-app", "partitions": 4,
                                          "lag": total_lag(seeded, "orders-app")}]


def test_health_page_shows_the_collectors_cycles(seeded):
    at = open_app(page="health", range="1h")
    m = metrics(at)
    assert (m["Cycles in range"], m["Failed cycles"]) == ("180", "0")
    assert m["Cycle time (median)"].endswith(" ms")


@pytest.mark.parametrize("page, text", [
    ("trends", "Spark analysis has not run yet — run `python -m monitor analyze`"),
    ("alerts", "Alerts are not set up yet"),
])
def test_pages_whose_tables_have_not_landed_say_so(seeded, page, text):
    at = open_app(page=page)
    assert text in at.info[0].value


def test_times_follow_the_viewer_zone_unless_utc_is_chosen(seeded):
    at = AppTest.from_file(APP, default_timeout=30)
    at.context["timezone"] = "Asia/Kolkata"
    at.run()
    assert any("Times shown in **Asia/Kolkata**" in c.value for c in at.sidebar.caption)
    at.toggle(key="utc").set_value(True).run()
    assert any("Times shown in **UTC**" in c.value for c in at.sidebar.caption)
    assert at.query_params["utc"] == "1"


def test_no_database_is_a_clear_empty_state_and_nothing_is_created(tmp_path, monkeypatch):
    missing = tmp_path / "none.db"
    monkeypatch.setenv("LAGMON_DATABASE_URL", f"sqlite:///{missing}")
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert [e.value for e in at.exception] == []
    assert "make demo" in at.info[0].value and "python -m monitor collect" in at.info[0].value
    assert not missing.exists()


def test_two_clusters_get_a_picker_and_the_url_chooses_one(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'two.db'}"
    engine = make_engine(url)
    upgrade(engine)
    store = Store(engine)
    now = int(datetime.now(timezone.utc).timestamp() * 1000)
    seed(store, now, cluster="prod")
    seed(store, now, cluster="staging")
    engine.dispose()
    monkeypatch.setenv("LAGMON_DATABASE_URL", url)
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["cluster"] = "staging"
    at.run()
    assert [e.value for e in at.exception] == []
    picker = at.sidebar.selectbox(key="cluster")
    assert (picker.options, picker.value) == (["prod", "staging"], "staging")
    assert any(c.value.startswith("Cluster staging") for c in at.caption)
    picker.set_value("prod").run()
    assert at.query_params["cluster"] == "prod"


def test_names_that_look_like_markup_stay_text(seeded):
    at = open_app(page="group", group=HTML_GROUP)
    assert any(t.value.startswith(f"GROUP {HTML_GROUP} ") for t in at.text)
    rendered_as_markdown = [m.value for m in [*at.markdown, *at.caption, *at.info, *at.warning]]
    assert not any(HTML_GROUP in value for value in rendered_as_markdown)
    pages = [Path(APP), *Path(APP).parent.joinpath("app_pages").glob("*.py")]
    assert [p.name for p in pages if "unsafe_allow_html" in p.read_text()] == []


def test_a_malformed_refresh_setting_is_one_clear_message(seeded, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_REFRESH", "often")
    at = open_app()
    assert [e.value for e in at.sidebar.error] == [
        "LAGMON_DASHBOARD_REFRESH: 'often' is not a duration (use e.g. 10s, 1m, 500ms); using 5 s"]
    assert metrics(at)["Groups"] == "4"
