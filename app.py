"""lagmon's dashboard: `python -m monitor dashboard` runs `streamlit run app.py`
(on 127.0.0.1, see .streamlit/config.toml).

The frame: page config, navigation over app_pages/, and the shared sidebar
(cluster, time range, zone, refresh, and the log-in when one is configured). It reads LAGMON_DATABASE_URL and never
creates or migrates a database: with none there yet it says how to make one.
The sidebar's choices live in the URL (?cluster=&range=&from=&to=&utc=), and
`?page=group&group=G&range=1h` opens that page, so chat alerts can link here.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # app_pages/ and monitor/, however started

import streamlit as st

from app_pages import login, shared
from monitor.config import parse_time
from monitor.models import ConfigError
from monitor.store.samples import read_clusters

st.set_page_config(page_title="lagmon", page_icon=":material/monitoring:", layout="wide")

PAGES = {
    "overview": st.Page("app_pages/overview.py", title="Overview", icon=":material/table_rows:", default=True),
    "group": st.Page("app_pages/group.py", title="Group", icon=":material/group:", url_path="group"),
    "rebalances": st.Page(
        "app_pages/rebalances.py", title="Rebalances", icon=":material/shuffle:", url_path="rebalances"
    ),
    "topics": st.Page("app_pages/topics.py", title="Topics", icon=":material/topic:", url_path="topics"),
    "trends": st.Page("app_pages/trends.py", title="Trends", icon=":material/trending_up:", url_path="trends"),
    "alerts": st.Page("app_pages/alerts.py", title="Alerts", icon=":material/notifications:", url_path="alerts"),
    "health": st.Page("app_pages/health.py", title="Health", icon=":material/monitor_heart:", url_path="health"),
}
current = st.navigation(list(PAGES.values()))
params = st.query_params

# ?page=NAME (links from alerts): go there, keeping the other parameters.
wanted = params.get("page")
if wanted:
    rest = {k: params.get_all(k) for k in params if k != "page"}
    if wanted in PAGES and PAGES[wanted].url_path != current.url_path:
        st.switch_page(PAGES[wanted], query_params=rest)
    del st.query_params["page"]


def _init(key: str, value) -> None:
    """A widget's first value comes from the URL; after that the widget owns it."""
    if key not in st.session_state:
        st.session_state[key] = value


def _clusters(url: str) -> list[str]:
    return [c.cluster for c in shared.read_from(url, read_clusters)]


def _wait_for_data(url: str, message: str) -> None:
    """The empty state: say what to run, and look again every few seconds until data arrives."""
    st.title("lagmon")
    st.info(message)

    @st.fragment(run_every=5)
    def _poll():
        if shared.missing_database(url) is None and _clusters(url):
            st.rerun(scope="app")

    _poll()
    st.stop()


url = shared.database_url()
problem = shared.missing_database(url)
if problem:
    _wait_for_data(
        url,
        f"{problem}\n\nNothing has been collected into the database that `LAGMON_DATABASE_URL` names. Start the "
        "collector (`python -m monitor collect` with `LAGMON_BOOTSTRAP_SERVERS` set) or run "
        "`make demo`; this page updates by itself once data arrives.",
    )
clusters = _clusters(url)
if not clusters:
    _wait_for_data(
        url,
        "The database exists but no collector cycle has been stored yet. Start the collector "
        "(`python -m monitor collect`) or run `make demo`; this page updates by itself.",
    )

with st.sidebar:
    st.markdown("**lagmon**")
    _init("cluster", params.get("cluster") if params.get("cluster") in clusters else clusters[0])
    if len(clusters) > 1:
        st.selectbox("Cluster", clusters, key="cluster")
    else:
        st.caption(f"Cluster: {shared.md(clusters[0])}")
        st.session_state.cluster = clusters[0]

    choices = [*shared.RANGES, shared.CUSTOM]
    _init("range", params.get("range") if params.get("range") in choices else "1h")
    st.segmented_control("Time range", choices, key="range", selection_mode="single")
    range_ = st.session_state.range or "1h"
    start_text = end_text = ""
    if range_ == shared.CUSTOM:
        _init("from", params.get("from", "-2h"))
        _init("to", params.get("to", "now"))
        start_text = st.text_input("From", key="from", help="ISO-8601 (UTC unless it names a zone) or -2h")
        end_text = st.text_input("To", key="to", help="ISO-8601, relative (-10m) or now")
        try:
            parse_time(start_text, 0, "From"), parse_time(end_text or "now", 0, "To")
        except ConfigError as e:
            st.error(str(e))

    viewer_zone = shared.valid_zone(st.context.timezone)
    _init("utc", params.get("utc") == "1")
    st.toggle("Show times in UTC", key="utc")
    tz = "UTC" if st.session_state.utc else viewer_zone
    st.caption(f"Times shown in **{shared.md(tz)}**" + ("" if st.session_state.utc else " (your browser's zone)"))

    default_refresh, refresh_problem = shared.refresh_setting()
    if refresh_problem:
        st.error(f"{refresh_problem}; using {default_refresh:g} s")
    steps = sorted({2.0, 5.0, 10.0, 30.0, 60.0, default_refresh})
    _init("refresh", default_refresh)
    st.select_slider("Refresh every (s)", steps, key="refresh", format_func=lambda s: f"{s:g}")
    _init("paused", False)
    st.toggle("Pause live refresh", key="paused")
    login.sidebar()  # who is logged in, when a login is configured (app_pages/login.py)

st.session_state["lagmon_choice"] = shared.Choice(
    url=url,
    cluster=st.session_state.cluster,
    range=range_,
    start_text=start_text,
    end_text=end_text,
    tz=tz,
    refresh_s=None if st.session_state.paused else float(st.session_state.refresh),
)

# Keep the URL in step with the sidebar, so the address bar can be shared as is.
shared_params = {"cluster": st.session_state.cluster, "range": range_}
if range_ == shared.CUSTOM:
    shared_params.update({"from": start_text, "to": end_text})
if st.session_state.utc:
    shared_params["utc"] = "1"
for key in ("cluster", "range", "from", "to", "utc"):
    if key in shared_params and params.get(key) != shared_params[key]:
        st.query_params[key] = shared_params[key]
    elif key not in shared_params and key in params:
        del st.query_params[key]

shared.run_guarded(current.run)
