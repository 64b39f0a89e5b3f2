"""What a viewer of a shared dashboard cannot see or do: no tracebacks (SQL, paths, hosts), no database
URL, no silence longer than LAGMON_SILENCE_MAX, no traceback from a hand-edited URL."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from dashboard_seed import open_app, seed

from monitor.store import Store, make_engine
from monitor.store.alerts import read_silences


def shown(at) -> list[str]:
    """Every text the page shows, sidebar included, as read (without Markdown's escapes)."""
    kinds = ("markdown", "caption", "success", "error", "warning", "info", "text", "title", "subheader")
    texts = [str(e.value) for kind in kinds for e in getattr(at, kind)] + [m.value for m in at.metric]
    return [t.replace("\\", "") for t in texts]


def test_a_page_that_fails_is_one_line_and_its_details_go_to_the_log_only(app_db_url, caplog):
    engine = make_engine(app_db_url)
    seed(Store(engine), int(datetime.now(UTC).timestamp() * 1000))
    with engine.begin() as conn:  # a table the Overview reads, gone: every read of it raises, with its SQL
        conn.exec_driver_sql("DROP TABLE offset_samples")
    engine.dispose()
    with caplog.at_level(logging.ERROR, logger="lagmon.dashboard"):
        at = open_app()
    assert [e.value for e in at.error] == [
        "This part of the page could not be shown (OperationalError); details in the dashboard's log."
    ]
    path = app_db_url.removeprefix("sqlite:///")
    assert not any("SELECT" in t or "offset_samples" in t or path in t for t in shown(at))
    assert "no such table: offset_samples" in caplog.text  # the details, in the server's log


def test_a_time_in_the_url_that_cannot_be_shown_is_one_clear_message(seeded_db):
    at = open_app(range="custom", **{"from": "-999999999d"})
    assert "From: '-999999999d' is outside 1970 to 9999" in [e.value for e in at.sidebar.error]
    assert at.dataframe[0].value["group"].tolist()  # the page shows the last hour instead


def test_the_health_page_does_not_show_the_database_url(seeded_db):
    at = open_app(page="health")
    path = seeded_db.url.removeprefix("sqlite:///")
    assert not any(path in t or Path(path).name in t for t in shown(at))


def test_a_silence_longer_than_the_bound_is_refused_and_nothing_is_stored(seeded_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "1")  # no login here: tests/ui/test_alert_writes.py
    monkeypatch.setenv("LAGMON_SILENCE_MAX", "1d")
    at = open_app(page="alerts")
    at.text_input(key="al_sil_group").set_value("orders-.*")
    at.text_input(key="al_sil_for").set_value("25h")
    at.button(key="al_sil_create").click().run()
    assert [e.value for e in at.error] == ["For: '25h' is more than 1d"]
    engine = make_engine(seeded_db.url)
    assert all(s.matchers.get("group") != "orders-.*" for s in read_silences(engine, 0))
    engine.dispose()
