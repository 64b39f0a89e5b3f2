"""Alerts: firing / pending / resolved, acknowledge, silence, test message.

The alert engine and its tables land separately; until they exist in this
database the page says so instead of guessing at their shape.
"""
import streamlit as st

from app_pages import _shared

st.title("Alerts")
tables = _shared.read("read_table_names")
alert_tables = sorted(t for t in tables if t.startswith("alert"))
if not alert_tables:
    st.info("Alerts are not set up yet: this database has no alert tables. Once the alert engine runs "
            "with the collector, firing, pending and resolved alerts appear here.")
else:
    st.info("Alert tables were found, but this dashboard build does not know their layout yet.")
    st.text("\n".join(alert_tables))
