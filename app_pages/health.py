"""Health of lagmon itself: the collector's last sample and cycle times, recent errors, database size."""
import pandas as pd
import streamlit as st

from app_pages import _shared
from monitor.charts import build_cycle_time_chart


def body() -> None:
    c = _shared.choice()
    since, until = _shared.window()
    cluster = next((x for x in _shared.read("read_clusters") if x.cluster == c.cluster), None)
    cycles = [s for s in _shared.read("read_samples", c.cluster, since) if s.taken_at < until]
    size = _shared.read("read_database_size")

    age_s = None if cluster is None else (_shared.now_ms() - cluster.last_sample_at) / 1000
    durations = [s.duration_ms for s in cycles if s.ok]
    failed = [s for s in cycles if not s.ok]
    cols = st.columns(5)
    cols[0].metric("Last sample", f"{age_s:.0f} s ago" if age_s is not None else "—")
    cols[1].metric("Cycle time (median)", f"{pd.Series(durations).median():.0f} ms" if durations else "—")
    cols[2].metric("Cycles in range", len(cycles))
    cols[3].metric("Failed cycles", len(failed))
    cols[4].metric("Database size", f"{size / 1e6:.1f} MB" if size is not None else "—")
    if cluster is not None:
        st.caption(f"Last sample at {_shared.fmt_time_zone(cluster.last_sample_at)}; "
                   f"{'ok' if cluster.last_ok else 'FAILED'}; {cluster.samples:,} samples stored since "
                   f"{_shared.fmt_time_zone(cluster.first_sample_at)}. Database: {_shared.md(_shared.safe_url(c.url))}")
    if age_s is not None and age_s > 3 * max(c.refresh_s or 5, 10):
        st.warning("The newest sample is old: is the collector running?")
    st.caption("Offsets-topic tail position and the last Spark run appear here once those parts land.")

    if durations:
        st.subheader("Cycle time")
        cdf = pd.DataFrame({"at": [s.taken_at for s in cycles if s.ok], "duration_ms": durations})
        st.altair_chart(build_cycle_time_chart(cdf, c.tz), width="stretch")

    st.subheader("Recent errors")
    if not failed:
        st.success("No failed cycles in this range.")
    else:
        edf = pd.DataFrame([{"at": s.taken_at, "duration (ms)": s.duration_ms, "errors": "; ".join(s.errors)}
                            for s in failed[-200:]])
        _shared.table(_shared.time_columns(edf, "at"), f"errors-{c.cluster}", key="hl_errors")


st.title("Collector health")
_shared.live(body)
