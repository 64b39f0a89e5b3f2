"""Every dashboard page through streamlit.testing.v1.AppTest on a seeded database.

The seed (tests/support/dashboard_seed.py) is written through the real Store and the
real snapshot diff; expected numbers come from the seed's final snapshot.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from dashboard_seed import (
    APP,
    FIRING_RULE,
    HTML_GROUP,
    PENDING_RULE,
    RESOLVED_RULE,
    STEP_MS,
    open_app,
    seed,
)
from streamlit.testing.v1 import AppTest

from monitor.lag import TimeLag
from monitor.store import Store, make_engine
from monitor.store.alerts import read_alerts, read_silences


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def total_lag(info, group: str) -> int:
    g = info.final.groups[group]
    return sum(info.final.partitions[tp].log_end - c for tp, c in g.committed.items())


def test_overview_lists_every_group_with_its_lag_and_cluster_totals(seeded_db):
    at = open_app()
    assert metrics(at) == {
        "Groups": "4",
        "Stable": "2",
        "Rebalancing": "1",
        "Total lag (offsets)": f"{sum(total_lag(seeded_db, g) for g in seeded_db.final.groups):,}",
        "Rebalances in the last hour": "3",
    }
    df = at.dataframe[0].value.set_index("group")
    assert df.loc["orders-app", "total lag"] == total_lag(seeded_db, "orders-app")
    assert df.loc["orders-app", "rebalances (1h)"] == 2
    assert df.loc["kip-app", "state"] == "Reconciling (inferred)"
    assert df.loc[HTML_GROUP, "state"] == "Empty"  # the HTML-looking name is a plain cell value
    assert len(df.loc["orders-app", "lag trend"]) == 20
    assert dict(at.query_params) == {"cluster": "prod", "range": "1h"}


def test_overview_search_and_lagging_filter(seeded_db):
    at = open_app()
    at.text_input(key="ov_search").set_value("APP").run()
    assert sorted(at.dataframe[0].value["group"]) == ["kip-app", "orders-app"]
    at.text_input(key="ov_search").set_value("").run()
    at.toggle(key="ov_lagging").set_value(True).run()
    assert "billing" not in set(at.dataframe[0].value["group"])


def test_alert_link_opens_the_group_page_and_range(seeded_db):
    at = open_app(page="group", group="orders-app", range="15m")
    assert at.selectbox(key="gp_group").value == "orders-app"
    assert at.session_state["range"] == "15m"
    m = metrics(at)
    assert (m["State"], m["Members"], m["Total lag"], m["Coordinator (id)"]) == (
        "Stable",
        "2",
        f"{total_lag(seeded_db, 'orders-app'):,}",
        "1",
    )
    parts = at.dataframe[0].value
    assert list(parts["lag"]) == [
        seeded_db.final.partitions[tp].log_end - c
        for tp, c in sorted(seeded_db.final.groups["orders-app"].committed.items())
    ]
    assert list(parts["client id"]) == ["orders-1", "orders-1", "orders-2", "orders-2"]
    assert len(at.get("vega_lite_chart")) == 2  # lag over time, status history


def test_group_page_marks_an_inferred_kip848_state(seeded_db):
    at = open_app(page="group", group="kip-app")
    assert metrics(at)["State"] == "Reconciling *"
    assert any("librdkafka reports Assigning/Reconciling as Unknown" in c.value for c in at.caption)


def test_rebalances_page_counts_the_groups_rebalances_and_offers_the_report(seeded_db):
    at = open_app(page="rebalances", group="orders-app", range="1h")
    assert metrics(at) == {
        "Rebalances": "2",
        "Groups": "1",
        "Longest": f"{2 * STEP_MS / 1000:.1f} s",
        "Partitions moved": "2",
    }
    details = at.dataframe[0].value
    assert list(details["trigger"]) == ["member_joined", "member_left"]
    assert list(details["who joined"]) == ["orders-3", ""]
    # timeline, ownership heatmap and lag, each over the whole window
    charts = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    x_domains = {json.dumps((c.get("encoding") or c["layer"][0]["encoding"])["x"]["scale"]["domain"]) for c in charts}
    assert len(charts) == 3 and len(x_domains) == 1
    assert "trigger:     member_left" in at.text[0].value


def test_custom_range_from_the_url_narrows_the_window(seeded_db):
    def iso(ms):
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat()

    start, end = seeded_db.first_at + 50 * STEP_MS, seeded_db.first_at + 100 * STEP_MS  # only the join
    at = open_app(page="rebalances", range="custom", **{"from": iso(start), "to": iso(end)})
    assert metrics(at)["Rebalances"] == "1"


@pytest.mark.parametrize(
    "page, params, downloads",
    [
        ("overview", {}, []),
        ("group", {"group": "orders-app"}, []),
        ("rebalances", {"group": "orders-app"}, ["Download incident report (Markdown)"]),  # a report, not a table
        ("topics", {}, []),
        ("trends", {}, []),
        ("alerts", {}, []),
        ("health", {}, []),
    ],
)
def test_a_table_has_one_csv_download_the_toolbars_own(analysed_db, monkeypatch, page, params, downloads):
    """Streamlit's toolbar over every st.dataframe downloads it as CSV; a button of ours would be a second one."""
    monkeypatch.setenv("LAGMON_DATABASE_URL", analysed_db.url)
    at = open_app(page=page, **params)
    assert len(at.dataframe) >= 1, page  # the page has tables: each with its toolbar
    assert [b.proto.label for b in at.get("download_button")] == downloads


def test_topics_page_lists_topics_and_their_readers(seeded_db):
    at = open_app(page="topics")
    topics = at.dataframe[0].value.set_index("topic")
    assert topics.loc["orders", "partitions"] == 4 and topics.loc["events", "groups"] == 2
    at.selectbox(key="tp_topic").set_value("orders").run()
    readers = at.dataframe[2].value
    assert readers.to_dict("records") == [
        {"group": "orders-app", "partitions": 4, "lag": total_lag(seeded_db, "orders-app")}
    ]


def test_health_page_shows_the_collectors_cycles(seeded_db):
    at = open_app(page="health", range="1h")
    m = metrics(at)
    assert (m["Cycles in range"], m["Failed cycles"]) == ("180", "0")
    assert m["Cycle time (median)"].endswith(" ms")
    assert any(c.value.startswith("of which sampling Kafka: ") for c in at.caption)
    assert any("Offsets-topic tail off or not readable" in i.value for i in at.info)
    assert any("The Spark analysis has not run yet" in i.value for i in at.info)


def test_health_page_shows_the_tail_position_and_the_last_spark_run(analysed_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DATABASE_URL", analysed_db.url)
    at = open_app(page="health")
    tail = at.dataframe[0].value
    assert tail[["partition", "next offset"]].to_dict("records") == [
        {"partition": 0, "next offset": 5000},
        {"partition": 7, "next offset": 42},
    ]
    m = metrics(at)
    assert (m["Analysis status"], m["Rows read / written"]) == ("ok", f"1,234 / {analysed_db.last.rows_written}")
    finished = datetime.fromtimestamp(analysed_db.last.finished_at / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert any(f"Finished at {finished} UTC" in c.value for c in at.caption)


def test_trends_page_says_the_analysis_has_not_run(seeded_db):
    at = open_app(page="trends")
    assert "Spark analysis has not run yet — run `python -m monitor analyze`" in at.info[0].value
    assert at.dataframe == [] and at.metric == []  # the result tables exist, but no run has filled them


def test_trends_page_shows_rates_eta_rebalances_ranking_and_the_last_run(analysed_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DATABASE_URL", analysed_db.url)
    # 6h: the seeded buckets are the hour of the seed's last sample and the one before; with 1h, a
    # test that ran just past the hour the seed was made in cut the older bucket out (CI at 04:00:00)
    at = open_app(page="trends", range="6h")
    assert metrics(at)["Status"] == "ok" and metrics(at)["Last analysis"].endswith(" ago")
    finished = datetime.fromtimestamp(analysed_db.last.finished_at / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert any(f"Last analysis finished at {finished} UTC" in c.value for c in at.caption)
    trends = at.dataframe[0].value.set_index("group")
    assert sorted(trends.index) == ["billing", "orders-app"]  # the whole-group rows, newest bucket each
    assert trends.loc["billing", "produce (msg/s)"] == 12.5 and trends.loc["billing", "consume (msg/s)"] == 10.0
    assert trends.loc["billing", "catch-up ETA"] == "not catching up"
    assert trends.loc["orders-app", "catch-up ETA"] == "5.0 min"  # 1,500 behind at 25 - 20 msg/s
    assert (trends.loc["billing", "lag seconds p95 (s)"], trends.loc["orders-app", "lag seconds p95 (s)"]) == (
        "≥ 45.0",
        "12.5",
    )  # billing's is only a lower bound
    rebalances = at.dataframe[1].value.set_index("group")
    assert rebalances.loc["orders-app", "rebalances"] == 2
    assert rebalances.loc["orders-app", "stop-the-world total (s)"] == 40.0
    assert rebalances.loc["orders-app", "top clients"] == "orders-3 (2)"
    assert list(at.dataframe[2].value["group"]) == ["kip-app", "orders-app"]  # the least stable first
    assert list(at.dataframe[3].value["protocol"]) == ["consumer", "eager"]
    at.selectbox(key="tr_group").set_value("orders-app").run()
    (chart,) = at.get("vega_lite_chart")
    drawn = {
        (row["series"], row["value"])
        for d in chart.proto.datasets
        for row in pa.ipc.open_stream(d.data.data).read_pandas().to_dict("records")
    }
    assert {("produce", 18.0), ("produce", 20.0), ("consume", 25.0)} <= drawn
    at.segmented_control(key="tr_window").set_value("1m").run()  # the seeded run wrote 1h buckets only
    assert any(i.value == "No 1m lag trends for this cluster yet." for i in at.info)


def test_a_failed_analysis_run_is_said_with_its_error_and_no_password(analysed_db, tmp_path, monkeypatch):
    from spark.load import RunRecord, write_failed_run

    path = tmp_path / "failed.db"
    path.write_bytes(Path(analysed_db.url.removeprefix("sqlite:///")).read_bytes())
    engine = make_engine(f"sqlite:///{path}")
    write_failed_run(
        engine,
        RunRecord(analysed_db.last.finished_at, 0, 0, None, None, "local[2]"),
        400,
        "Py4JJavaError: cannot connect to jdbc:postgresql://lagmon:s3cret@db:5432/lagmon",
    )
    engine.dispose()
    monkeypatch.setenv("LAGMON_DATABASE_URL", f"sqlite:///{path}")
    for page in ("trends", "health"):
        at = open_app(page=page)
        assert metrics(at)["Status" if page == "trends" else "Analysis status"] == "failed"
        (error,) = [t.value for t in at.text if "Py4JJavaError" in t.value]
        assert "jdbc:postgresql://lagmon:***@db:5432/lagmon" in error
        assert not any(
            "s3cret" in str(e.value) for kind in ("text", "error", "caption", "markdown") for e in getattr(at, kind)
        )
        if page == "trends":  # the earlier successful run's results are still shown
            assert sorted(at.dataframe[0].value["group"]) == ["billing", "orders-app"]


# -- health and alerts (seed_health: orders-app WARN with orders-3 STALL; three alert episodes) --


def test_overview_shows_status_and_filters_by_it(seeded_db):
    at = open_app()
    df = at.dataframe[0].value.set_index("group")
    assert (df.loc["orders-app", "status"], df.loc["orders-app", "worst partition"]) == ("WARN", "STALL")
    assert df.loc["billing", "status"] == "OK" and df.loc["kip-app", "status"] == "—"
    # kip-app commits 5 behind on `events`, whose log end grows by 1 per 10 s sample: the record after
    # the committed offset was appended 4 samples (40 s) before the newest one, less the 40-46 ms the
    # seed's sampling took before its log ends were read.
    assert 39.95 <= df.loc["kip-app", "max lag seconds"] <= 39.96
    assert df.loc["billing", "max lag seconds"] == 0.0
    at.multiselect(key="ov_status").set_value(["WARN"]).run()
    assert list(at.dataframe[0].value["group"]) == ["orders-app"]


def test_overview_max_lag_seconds_is_a_number_column_that_sorts_as_one(seeded_db):
    at = open_app()
    df = at.dataframe[0].value
    assert str(df["max lag seconds"].dtype) == "float64" and str(df["lower bound"].dtype) == "bool"
    assert df.set_index("group").loc["kip-app", "± (s)"] >= 10.0  # no closer than its samples, 10 s apart
    config = json.loads(at.dataframe[0].proto.columns)
    assert config["max lag seconds"]["type_config"] == {"type": "number", "format": "%.1f"}
    assert config["lower bound"]["type_config"]["type"] == "checkbox"
    by_seconds = df.sort_values("max lag seconds", ascending=False)["group"].tolist()
    assert by_seconds[0] == "kip-app" and by_seconds[-1] == "billing"  # 40 s above 20 s: by number, not text
    assert not df["lower bound"].any()  # the seed's consumers are all within its hour of history


def test_overview_flags_a_lower_bound_beside_the_number(seeded_db, monkeypatch):
    """A consumer further behind than the hour of history: its seconds stay a number, the bound is ticked."""
    from app_pages import shared
    from monitor.store import lag_seconds

    monkeypatch.setattr(
        lag_seconds, "read_max_lag_seconds", lambda engine, cluster: {"kip-app": TimeLag(3600.0, at_least=True)}
    )
    shared.forget_reads()
    try:
        df = open_app().dataframe[0].value.set_index("group")
    finally:
        shared.forget_reads()
    assert (df.loc["kip-app", "max lag seconds"], df.loc["kip-app", "lower bound"]) == (3600.0, True)
    assert pd.isna(df.loc["billing", "max lag seconds"]) and not df.loc["billing", "lower bound"]  # not known


def test_group_page_shows_partition_status_lag_seconds_and_status_history(seeded_db):
    at = open_app(page="group", group="orders-app")
    assert metrics(at)["Status"] == "WARN"
    parts = at.dataframe[0].value.set_index("partition")
    assert list(parts["status"]) == ["OK", "OK", "OK", "STALL"]
    status_chart = json.loads(at.get("vega_lite_chart")[1].proto.spec)
    assert status_chart["encoding"]["y"]["sort"] == ["group", "orders-0", "orders-1", "orders-2", "orders-3"]
    at = open_app(page="group", group="kip-app")
    # one record per 10 s sample: appended within the 10 s before the sample that first saw it
    assert at.dataframe[0].value["lag seconds"].tolist() == ["40.0s ±10.0"]  # see the overview test
    assert metrics(at)["Max lag seconds"] == "40.0s ±10.0"


def test_alerts_page_lists_firing_pending_and_recently_resolved(seeded_db):
    at = open_app(page="alerts")
    assert metrics(at) == {"Firing": "1", "Pending": "1", "Resolved in range": "1"}
    firing, pending, resolved = (at.dataframe[i].value for i in range(3))
    assert (firing["rule"].tolist(), firing["group"].tolist()) == ([FIRING_RULE], ["orders-app"])
    assert (pending["rule"].tolist(), resolved["rule"].tolist()) == ([PENDING_RULE], [RESOLVED_RULE])


def test_acknowledging_an_alert_stores_the_ack(seeded_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "1")  # no login here: tests/ui/test_alert_writes.py
    at = open_app(page="alerts")
    at.text_input(key="al_ack_by").set_value("sre-on-call")
    at.selectbox(key="al_ack_id").set_value(seeded_db.alert_ids["firing"])
    at.button(key="al_ack").click().run()
    assert [e.value for e in at.exception] == []
    engine = make_engine(seeded_db.url)
    acked = {a.id: a.acked_by for a in read_alerts(engine, seeded_db.cluster)}
    engine.dispose()
    assert acked[seeded_db.alert_ids["firing"]] == "sre-on-call"
    assert at.success[0].value.startswith(f"Alert #{seeded_db.alert_ids['firing']} acknowledged")
    assert at.dataframe[0].value["acknowledged by"].tolist() == ["sre-on-call"]


def test_a_silence_is_created_listed_and_expired(seeded_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "1")  # no login here: tests/ui/test_alert_writes.py
    at = open_app(page="alerts")
    at.text_input(key="al_sil_group").set_value("orders-.*")
    at.text_input(key="al_sil_for").set_value("90m")
    at.button(key="al_sil_create").click().run()
    assert [e.value for e in at.exception] == []
    engine = make_engine(seeded_db.url)
    now = int(datetime.now(UTC).timestamp() * 1000)
    [silence] = read_silences(engine, now)
    assert silence.matchers == {"cluster": seeded_db.cluster, "group": "orders-.*"}
    assert abs(silence.until - (now + 90 * 60_000)) < 60_000
    assert "orders-.*" in at.dataframe[-1].value["matchers"].iloc[0]
    at.button(key="al_expire").click().run()
    assert read_silences(engine, now + 1000) == []
    engine.dispose()


def test_a_bad_silence_is_one_clear_error_and_nothing_is_stored(seeded_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "1")  # no login here: tests/ui/test_alert_writes.py
    at = open_app(page="alerts")
    at.text_input(key="al_sil_group").set_value("orders-(")
    at.button(key="al_sil_create").click().run()
    assert [e.value for e in at.error] == [
        "silence matcher group: 'orders-(' is not a regular expression (missing ), unterminated subpattern "
        "at position 7)"
    ]
    engine = make_engine(seeded_db.url)
    assert all(s.matchers.get("group") != "orders-(" for s in read_silences(engine, 0))
    engine.dispose()


def test_a_test_message_reaches_the_channel_and_its_url_is_never_shown(seeded_db, httpserver, monkeypatch):
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    url = f"json://{httpserver.host}:{httpserver.port}/hook"
    monkeypatch.setenv("LAGMON_CHANNELS", f"ops={url}")
    at = open_app(page="alerts")
    assert at.button(key="al_test_send").disabled  # no login, no anonymous writes: nobody may send
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "1")
    at = open_app(page="alerts")
    assert at.selectbox(key="al_test_channel").options == ["ops"]
    at.button(key="al_test_send").click().run()
    assert at.success[-1].value == "Channel ops: the message was accepted."
    [(request, _)] = httpserver.log
    assert "lagmon test message" in request.get_data(as_text=True)
    shown = [e.value for kind in ("markdown", "caption", "success", "error", "info", "text") for e in getattr(at, kind)]
    assert not any(str(httpserver.port) in str(v) for v in shown)


def test_times_follow_the_viewer_zone_unless_utc_is_chosen(seeded_db):
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


def test_two_clusters_get_a_picker_and_the_url_chooses_one(app_db_url):
    engine = make_engine(app_db_url)
    store = Store(engine)
    now = int(datetime.now(UTC).timestamp() * 1000)
    seed(store, now, cluster="prod")
    seed(store, now, cluster="staging")
    engine.dispose()
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["cluster"] = "staging"
    at.run()
    assert [e.value for e in at.exception] == []
    picker = at.sidebar.selectbox(key="cluster")
    assert (picker.options, picker.value) == (["prod", "staging"], "staging")
    assert any(c.value.startswith("Cluster staging") for c in at.caption)
    picker.set_value("prod").run()
    assert at.query_params["cluster"] == "prod"


def test_names_that_look_like_markup_stay_text(seeded_db):
    at = open_app(page="group", group=HTML_GROUP)
    assert any(t.value.startswith(f"GROUP {HTML_GROUP} ") for t in at.text)
    rendered_as_markdown = [m.value for m in [*at.markdown, *at.caption, *at.info, *at.warning]]
    assert not any(HTML_GROUP in value for value in rendered_as_markdown)
    pages = [Path(APP), *Path(APP).parent.joinpath("app_pages").glob("*.py")]
    assert [p.name for p in pages if "unsafe_allow_html" in p.read_text()] == []


def test_a_malformed_refresh_setting_is_one_clear_message(seeded_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_REFRESH", "often")
    at = open_app()
    assert [e.value for e in at.sidebar.error] == [
        "LAGMON_DASHBOARD_REFRESH: 'often' is not a duration (use e.g. 10s, 1m, 500ms); using 5 s"
    ]
    assert metrics(at)["Groups"] == "4"


def test_a_refresh_under_a_second_is_one_clear_message_not_a_traceback(seeded_db, monkeypatch):
    """0.5ms once divided the page's time window by zero; 1ms would have reloaded the page a thousand times a
    second."""
    monkeypatch.setenv("LAGMON_DASHBOARD_REFRESH", "0.5ms")
    at = open_app()
    assert [e.value for e in at.error] == ["LAGMON_DASHBOARD_REFRESH: '0.5ms' is less than 1s; using 5 s"]
    assert [e.value for e in at.exception] == [] and metrics(at)["Groups"] == "4"


def test_a_database_from_before_the_alert_tables_says_so(app_db_url):
    engine = make_engine(app_db_url)
    seed(Store(engine), int(datetime.now(UTC).timestamp() * 1000))
    with engine.begin() as conn:  # what a database migrated before the health/alerts tables looks like
        for table in (
            "alert_outbox",
            "alert_silences",
            "alerts",
            "partition_status",
            "group_status",
            "analysis_runs",
            "offsets_tail_positions",
        ):  # and before the Spark results and the tail
            conn.exec_driver_sql(f"DROP TABLE {table}")
    engine.dispose()
    at = open_app(page="alerts")
    assert "Alerts are not set up yet" in at.info[0].value and "python -m monitor db upgrade" in at.info[0].value
    at = open_app()
    assert set(at.dataframe[0].value["status"]) == {"—"}
    at = open_app(page="group", group="orders-app")
    assert metrics(at)["Status"] == "—" and set(at.dataframe[0].value["status"]) == {"—"}
    assert "Spark analysis has not run yet" in open_app(page="trends").info[0].value
    infos = [i.value for i in open_app(page="health").info]
    assert any("tail off or not readable" in i for i in infos) and any("has not run yet" in i for i in infos)
