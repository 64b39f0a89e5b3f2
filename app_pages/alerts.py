"""Alerts: firing / pending / recently resolved, acknowledge, silence, send a test message.

The one place the dashboard writes (docs/architecture.md section 1): acknowledgements and
silences, through monitor.store.alerts, by the logged-in user when a login is configured
(app_pages/login.py), else only when LAGMON_DASHBOARD_ANONYMOUS_WRITES allows it. Channels are
listed by name only: their Apprise URLs are secrets and never reach the page.
"""

import pandas as pd
import streamlit as st

from app_pages import login, shared
from monitor.alerts.lifecycle import FIRING, PENDING, RESOLVED
from monitor.clock import wall_ms
from monitor.config import AlertSettings, silence_end
from monitor.models import ConfigError, LagmonError
from monitor.store import alerts as alert_store
from monitor.store.alerts import read_alerts
from monitor.store.engine import read_table_names

MATCH_FIELDS = ("rule", "cluster", "group", "topic", "severity")


def alert_frame(rows) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "id": a.id,
                "severity": a.severity,
                "rule": a.rule,
                "group": a.group_id,
                "topic": a.topic,
                "since": a.fired_at or a.started_at,
                "resolved": a.resolved_at,
                "summary": a.summary,
                "acknowledged by": a.acked_by or "",
                "acknowledged": a.acked_at,
            }
            for a in rows
        ],
        columns=[
            "id",
            "severity",
            "rule",
            "group",
            "topic",
            "since",
            "resolved",
            "summary",
            "acknowledged by",
            "acknowledged",
        ],
    )


def show_alerts() -> None:
    since, _until = shared.window()
    rows = shared.read(read_alerts, c.cluster, resolved_since=since)
    by_state = {state: [a for a in rows if a.state == state] for state in (FIRING, PENDING, RESOLVED)}
    cols = st.columns(3)
    cols[0].metric("Firing", len(by_state[FIRING]))
    cols[1].metric("Pending", len(by_state[PENDING]))
    cols[2].metric("Resolved in range", len(by_state[RESOLVED]))
    for state, title, empty in (
        (FIRING, "Firing", "Nothing is firing."),
        (PENDING, "Pending", "Nothing is pending (a condition must hold for its rule's duration before it fires)."),
        (RESOLVED, "Recently resolved", "Nothing resolved in the chosen range."),
    ):
        st.subheader(title)
        if not by_state[state]:
            st.caption(empty)
            continue
        df = alert_frame(by_state[state])
        if state != RESOLVED:
            df = df.drop(columns=["resolved"])
        times = [col for col in ("since", "resolved", "acknowledged") if col in df]
        shared.table(shared.time_columns(df, *times), key=f"al_{state}")


def save_then_rerun(w: login.Writer, write, done) -> None:
    """Run one store write if `w` may write; show its error, or say what it did (done(its result)) and redraw."""
    if not w.allowed:  # the controls are disabled; a stale page's click must not write either
        st.error("Not saved: this session may not acknowledge or silence (see above).")
        return
    try:
        result = write()
    except LagmonError as e:  # ConfigError too
        st.error(str(e))
        return
    shared.forget_reads()
    st.session_state.al_done = done(result)
    st.rerun()


def author(w: login.Writer, label: str, key: str) -> str:
    """The name a write records: the logged-in user, else what was typed (unverified), else 'dashboard'."""
    if w.name is not None:
        return w.name
    typed = st.text_input(label, key=key, placeholder="your name (not verified)", disabled=not w.allowed)
    return typed.strip() or "dashboard"


def acknowledge(w: login.Writer) -> None:
    firing = [a for a in shared.read(read_alerts, c.cluster) if a.state == FIRING and a.acked_at is None]
    if not firing:
        st.caption("No unacknowledged firing alert.")
        return
    with st.form("al_ack_form", clear_on_submit=False, border=False):
        labels = {
            a.id: f"#{a.id} {a.rule} · {a.group_id or 'cluster'}{' · ' + a.topic if a.topic else ''}" for a in firing
        }
        alert_id = st.selectbox("Alert", list(labels), format_func=labels.get, key="al_ack_id", disabled=not w.allowed)
        who = author(w, "Acknowledged by", "al_ack_by")
        if st.form_submit_button("Acknowledge", key="al_ack", disabled=not w.allowed):
            save_then_rerun(
                w,
                lambda: alert_store.write_ack(shared.get_engine(c.url), int(alert_id), who, wall_ms()),
                lambda _: f"Alert #{alert_id} acknowledged: no more repeats; its resolution is still sent.",
            )


def silences_frame(active) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "id": s.id,
                "matchers": ", ".join(f"{k}={v}" for k, v in s.matchers.items()),
                "until": s.until,
                "created by": s.created_by,
                "comment": s.comment,
            }
            for s in active
        ],
        columns=["id", "matchers", "until", "created by", "comment"],
    )


def silence_form(w: login.Writer) -> None:
    with st.form("al_silence_form", border=False):
        st.caption("Regular expressions, each matching a whole field; empty fields match anything.")
        cols = st.columns(len(MATCH_FIELDS))
        patterns = {
            f: cols[i].text_input(
                f, key=f"al_sil_{f}", value=c.cluster if f == "cluster" else "", disabled=not w.allowed
            )
            for i, f in enumerate(MATCH_FIELDS)
        }
        d1, d2, d3 = st.columns([1, 1, 2])
        duration = d1.text_input("For", value="2h", key="al_sil_for", help="e.g. 30m, 2h, 1d", disabled=not w.allowed)
        with d2:
            who = author(w, "Created by", "al_sil_by")
        comment = d3.text_input("Comment", key="al_sil_comment", disabled=not w.allowed)
        if st.form_submit_button("Create silence", key="al_sil_create", disabled=not w.allowed):
            matchers = {f: p.strip() for f, p in patterns.items() if p.strip()}

            def create() -> tuple[int, int]:
                if not matchers:
                    raise ConfigError("a silence needs at least one matcher")
                now = wall_ms()
                until = silence_end(duration, now, AlertSettings.one_from_env("silence_max_s"), "For")
                return alert_store.write_silence(shared.get_engine(c.url), matchers, until, now, who, comment), until

            save_then_rerun(
                w, create, lambda made: f"Silence #{made[0]} created until {shared.fmt_time_zone(made[1])}."
            )


def silences_in_force(w: login.Writer) -> None:
    """The silences in force, each of which can be expired now."""
    active = alert_store.read_silences(shared.get_engine(c.url), wall_ms())
    if not active:
        st.caption("No silence in force.")
        return
    shared.table(shared.time_columns(silences_frame(active), "until"), key="al_silences")
    e1, e2 = st.columns([3, 1])
    ending = e1.selectbox(
        "Expire a silence",
        [s.id for s in active],
        key="al_expire_id",
        format_func=lambda i: f"#{i}",
        disabled=not w.allowed,
    )
    if e2.button("Expire now", key="al_expire", disabled=not w.allowed):
        save_then_rerun(
            w,
            lambda: alert_store.write_silence_end(shared.get_engine(c.url), int(ending), wall_ms()),
            lambda _: f"Silence #{ending} expired.",
        )


def test_message(w: login.Writer) -> None:
    from monitor.alerts.engine import load_alerting
    from monitor.alerts.notify import send_message

    try:
        rules, _ = load_alerting(AlertSettings.from_env())
    except ConfigError as e:  # the messages name the line or channel, never a URL
        st.error(f"The alerting settings are broken: {e}")
        return
    names = sorted(rules.channels)
    if not names:
        st.caption("No channel is defined: set LAGMON_CHANNELS=name=apprise-url (or channels in the rules file).")
        return
    t1, t2 = st.columns([3, 1])
    name = t1.selectbox("Channel", names, key="al_test_channel")
    if t2.button("Send test message", key="al_test_send", disabled=not w.allowed):
        with st.spinner(f"Sending to {name}…"):
            ok = send_message(
                rules.channels[name],
                "🧪 lagmon test message",
                f"If you can read this, channel {name} works. Sent from the dashboard at "
                f"{shared.fmt_time(wall_ms(), 'UTC')} UTC.",
            )
        if ok:
            st.success(f"Channel {name}: the message was accepted.")
        else:
            st.error(f"Channel {name}: the message did NOT arrive (the service refused it or could not be reached).")


st.title("Alerts")
c = shared.choice()
if "alerts" not in shared.read(read_table_names):
    st.info(
        "Alerts are not set up yet: this database has no alert tables (it was created before the alert "
        "engine; run `python -m monitor db upgrade`). Once the alert engine runs with the collector, firing, "
        "pending and resolved alerts appear here."
    )
    st.stop()
if "al_done" in st.session_state:
    st.success(st.session_state.pop("al_done"))
shared.live(show_alerts)
st.divider()
writer = login.writer()
login.explain(writer)
st.subheader("Acknowledge")
acknowledge(writer)
st.subheader("Silences")
silence_form(writer)
silences_in_force(writer)
st.subheader("Send a test message")
test_message(writer)
