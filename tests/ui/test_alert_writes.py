"""Who may acknowledge and silence on the Alerts page (app_pages/login.py), through AppTest.

A login configured (an `[auth]` secrets section) and a logged-in user: writes record the
user's email, else their subject, and nobody types a name. Logged out, or no login at all:
the controls are disabled and the page says why, unless LAGMON_DASHBOARD_ANONYMOUS_WRITES=1
(no login) brings back the typed, unverified name. The real provider and browser are in
tests/e2e/test_dashboard_login.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from dashboard_seed import open_app

from monitor.store import make_engine
from monitor.store.alerts import read_alerts, read_silences

AUTH = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "a-long-random-string-for-the-test",
    "client_id": "lagmon",
    "client_secret": "not-a-real-secret",
    "server_metadata_url": "http://127.0.0.1:1/default/.well-known/openid-configuration",
}
ALICE = {"is_logged_in": True, "email": "alice@example.com", "email_verified": True, "sub": "alice", "name": "Alice"}


@pytest.fixture
def alerts_db(seeded_db, tmp_path, monkeypatch):
    """A copy of the seeded database for one test (these tests write acks and silences)."""
    path = tmp_path / "alerts.db"
    path.write_bytes(Path(seeded_db.url.removeprefix("sqlite:///")).read_bytes())
    url = f"sqlite:///{path}"
    monkeypatch.setenv("LAGMON_DATABASE_URL", url)
    monkeypatch.delenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", raising=False)
    engine = make_engine(url)
    yield SimpleNamespace(engine=engine, cluster=seeded_db.cluster, firing=seeded_db.alert_ids["firing"])
    engine.dispose()


def write_controls(at) -> dict[str, bool]:
    """The write buttons of the Alerts page: key -> disabled."""
    return {b.key: b.disabled for b in at.button if b.key in ("al_ack", "al_sil_create", "al_expire")}


def acked_by(db) -> str | None:
    return {a.id: a.acked_by for a in read_alerts(db.engine, db.cluster)}[db.firing]


def now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


def test_without_a_login_writes_are_off_and_the_page_says_why(alerts_db):
    at = open_app(page="alerts")
    [why] = [i.value for i in at.info]
    assert why.startswith("Acknowledging and silencing are off: no login is configured.")
    assert "LAGMON_DASHBOARD_ANONYMOUS_WRITES=1" in why
    assert write_controls(at) == {"al_ack": True, "al_sil_create": True}
    assert at.text_input(key="al_ack_by").disabled and at.selectbox(key="al_ack_id").disabled
    assert not any(b.key in ("auth_login", "auth_logout") for b in at.sidebar.button)  # nothing to log in to
    assert metrics_shown(at)  # the read-only part is all there
    assert acked_by(alerts_db) is None


def metrics_shown(at) -> bool:
    return {m.label for m in at.metric} == {"Firing", "Pending", "Resolved in range"}


def test_anonymous_writes_keep_the_typed_name_and_say_it_is_unverified(alerts_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "1")
    at = open_app(page="alerts")
    assert "the names typed here are not verified" in at.warning[0].value
    assert write_controls(at) == {"al_ack": False, "al_sil_create": False}
    at.text_input(key="al_ack_by").set_value("sre-on-call")
    at.selectbox(key="al_ack_id").set_value(alerts_db.firing)
    at.button(key="al_ack").click().run()
    assert [e.value for e in at.exception] == [] and acked_by(alerts_db) == "sre-on-call"


def test_a_malformed_anonymous_writes_setting_is_writes_off_with_the_reason(alerts_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "sure")
    at = open_app(page="alerts")
    assert [i.value for i in at.info] == [
        "Acknowledging and silencing are off: LAGMON_DASHBOARD_ANONYMOUS_WRITES: 'sure' is not on "
        "(1, true, yes, on) or off (0, false, no, off)."
    ]
    assert write_controls(at) == {"al_ack": True, "al_sil_create": True}
    assert not at.sidebar.error  # the refresh setting is not the one that is wrong


def test_logged_in_acks_and_silences_record_the_users_email(alerts_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "1")  # ignored once a login is configured
    at = open_app(page="alerts", secrets={"auth": AUTH}, user=ALICE)
    assert any("Logged in as **alice@example\\.com**" in c.value for c in at.sidebar.caption)
    assert [b.key for b in at.sidebar.button if b.key.startswith("auth_")] == ["auth_logout"]
    assert any("recorded as **alice@example\\.com** (logged in)" in c.value for c in at.caption)
    assert not at.warning and write_controls(at) == {"al_ack": False, "al_sil_create": False}
    assert not [t for t in at.text_input if t.key in ("al_ack_by", "al_sil_by")]  # no name to type

    at.selectbox(key="al_ack_id").set_value(alerts_db.firing)
    at.button(key="al_ack").click().run()
    assert [e.value for e in at.exception] == [] and acked_by(alerts_db) == "alice@example.com"
    assert at.dataframe[0].value["acknowledged by"].tolist() == ["alice@example.com"]

    at.text_input(key="al_sil_group").set_value("orders-.*")
    at.button(key="al_sil_create").click().run()
    [made] = read_silences(alerts_db.engine, now_ms())
    assert (made.created_by, made.matchers["group"]) == ("alice@example.com", "orders-.*")
    at.button(key="al_expire").click().run()
    assert read_silences(alerts_db.engine, now_ms() + 1000) == []


def test_a_user_without_an_email_is_recorded_by_subject(alerts_db):
    at = open_app(page="alerts", secrets={"auth": AUTH}, user={"is_logged_in": True, "sub": "8f1c-user"})
    at.selectbox(key="al_ack_id").set_value(alerts_db.firing)
    at.button(key="al_ack").click().run()
    assert acked_by(alerts_db) == "8f1c-user"


def test_an_email_the_provider_did_not_verify_is_not_taken_the_subject_is(alerts_db):
    user = {"is_logged_in": True, "email": "ceo@example.com", "email_verified": False, "sub": "8f1c-user"}
    at = open_app(page="alerts", secrets={"auth": AUTH}, user=user)
    at.selectbox(key="al_ack_id").set_value(alerts_db.firing)
    at.button(key="al_ack").click().run()
    assert acked_by(alerts_db) == "8f1c-user"


def test_logged_out_with_a_login_configured_the_controls_wait_for_a_log_in(alerts_db, monkeypatch):
    monkeypatch.setenv("LAGMON_DASHBOARD_ANONYMOUS_WRITES", "1")  # no way around the login
    at = open_app(page="alerts", secrets={"auth": AUTH}, user={"is_logged_in": False})
    assert [i.value for i in at.info] == [
        "Log in (in the sidebar) to acknowledge or silence alerts: they record who you are."
    ]
    assert [b.key for b in at.sidebar.button if b.key.startswith("auth_")] == ["auth_login"]
    assert write_controls(at) == {"al_ack": True, "al_sil_create": True}
    assert not at.warning


def test_an_incomplete_auth_section_is_named_and_writes_stay_off(alerts_db):
    incomplete = {k: v for k, v in AUTH.items() if k not in ("client_secret", "cookie_secret")}
    at = open_app(page="alerts", secrets={"auth": incomplete}, user=ALICE)
    expected = "the login is not set up completely: [auth] in secrets.toml lacks cookie_secret, client_secret"
    assert [i.value for i in at.info] == [f"Acknowledging and silencing are off: {expected}."]
    assert any(c.value == f"Login: {expected}." for c in at.sidebar.caption)
    assert write_controls(at) == {"al_ack": True, "al_sil_create": True}


def test_read_only_pages_do_not_ask_for_a_login(alerts_db):
    at = open_app(secrets={"auth": AUTH}, user={"is_logged_in": False})
    assert at.dataframe[0].value["group"].size > 0 and not at.info
