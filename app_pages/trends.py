"""Trends: the Spark analysis results (rates, catch-up ETA, lag-seconds percentiles, least stable groups).

The Spark jobs and their result tables land separately; until they exist in this
database the page says how to produce them instead of guessing at their shape.
"""
import streamlit as st

from app_pages import _shared

st.title("Trends")
tables = _shared.read("read_table_names")
spark_tables = sorted(t for t in tables if t.startswith(("trend", "lag_trend", "rebalance_stat", "spark_")))
if not spark_tables:
    st.info("Spark analysis has not run yet — run `python -m monitor analyze` "
            "(its results appear here: produce and consume rates, catch-up ETA, lag-seconds percentiles, "
            "rebalance frequency and the least stable groups).")
else:
    st.info("Spark result tables were found, but this dashboard build does not know their layout yet.")
    st.text("\n".join(spark_tables))
