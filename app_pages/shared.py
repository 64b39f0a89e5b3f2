"""What every page shares: the engine, cached reads, the sidebar's choices, time formatting, tables.

app.py builds the sidebar once per run and leaves a `Choice` in session state;
pages call `choice()` and `window()` (the time window is recomputed on every
live refresh, so charts move with the clock). Pages call the store's read functions
through `read(read_x, ...)`, which caches by (function, database URL, arguments)
for one refresh interval.
Group names, client ids and hosts are data: pages show them with st.dataframe,
st.text or st.code, never as HTML.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd
import sqlalchemy as sa
import streamlit as st

from monitor.clock import wall_ms
from monitor.config import DashboardSettings, StoreSettings, parse_time
from monitor.logs import get_logger
from monitor.models import ConfigError
from monitor.store import engine as store_engine

RANGES = {"15m": 15 * 60_000, "1h": 3_600_000, "6h": 6 * 3_600_000, "24h": 24 * 3_600_000, "7d": 7 * 24 * 3_600_000}
CUSTOM = "custom"


def refresh_setting() -> tuple[float, str | None]:
    """LAGMON_DASHBOARD_REFRESH; a bad value gives the default and the reason (the dashboard still shows data)."""
    try:
        return DashboardSettings.one_from_env("refresh_s"), None
    except ConfigError as e:
        return DashboardSettings().refresh_s, str(e)


def default_refresh_s() -> float:
    return refresh_setting()[0]


def database_url() -> str:
    return StoreSettings.from_env().database_url


def missing_database(url: str) -> str | None:
    """Why there is nothing to show yet, or None. Never creates or migrates anything."""
    parsed = sa.engine.make_url(url)
    db = parsed.database
    if parsed.get_backend_name() == "sqlite" and db not in (None, "", ":memory:") and not Path(db).exists():
        return "There is no database yet."
    try:
        tables = store_engine.read_table_names(get_engine(url))
    except sa.exc.SQLAlchemyError as e:
        return f"The database cannot be read: {type(e).__name__}."
    if "samples" not in tables:
        return "The database has no lagmon tables yet."
    return None


@st.cache_resource(show_spinner=False)
def get_engine(url: str):
    """One engine (connection pool) per database URL for the whole server."""
    return store_engine.make_engine(url)


@st.cache_data(ttl=default_refresh_s(), show_spinner=False, max_entries=512)
def _cached_read(_read: Callable, name: str, url: str, args: tuple, kwargs: tuple):
    """Streamlit hashes no argument whose name starts with "_": the read is keyed by its `name`."""
    return _read(get_engine(url), *args, **dict(kwargs))


def read_from(url: str, read: Callable, *args, **kwargs):
    """`read`, a `monitor.store` read function, on the database at `url`, cached for one refresh."""
    return _cached_read(read, f"{read.__module__}.{read.__qualname__}", url, args, tuple(sorted(kwargs.items())))


def read(read: Callable, *args, **kwargs):
    """`read_from` the dashboard's database."""
    return read_from(choice().url, read, *args, **kwargs)


def forget_reads() -> None:
    """Drop cached reads: after the page itself wrote (an ack, a silence), show the new state at once."""
    _cached_read.clear()


def has_health(url: str | None = None) -> bool:
    """The evaluator's tables exist (a database migrated before they landed has none: show —)."""
    return "group_status" in read_from(url or choice().url, store_engine.read_table_names)


def fmt_lag_seconds(lag) -> str:
    """A TimeLag as its own str does it ("12.3s ±0.5", "≥ 3600.0s"), — when unknown."""
    return "—" if lag is None else str(lag)


LAG_SECONDS_HELP = (
    "How long the oldest record not yet consumed has waited, from the log-end history: ±x is the most the true"
    " figure can differ (the record was appended between two samples); ≥ marks a lower bound (it is older than"
    " the history)"
)


def fmt_status(status) -> str:
    return "—" if status is None else status.name


@dataclass(frozen=True)
class Choice:
    """The sidebar's state: which cluster, which window, which zone, how often to refresh."""

    url: str
    cluster: str
    range: str  # a key of RANGES or CUSTOM
    start_text: str  # CUSTOM only: ISO-8601 or relative (-2h)
    end_text: str
    tz: str
    refresh_s: float | None  # None: paused


def choice() -> Choice:
    return st.session_state["lagmon_choice"]


def follow_group_link(names: list[str], key: str) -> str | None:
    """A link (?group=G) picks the group in the picker `key`; after that the picker owns it until another
    link arrives. Returns the linked group, if any."""
    requested = st.query_params.get("group")
    seen = f"{key}_link"
    if requested in names and (st.session_state.get(seen) != requested or not st.session_state.get(key)):
        st.session_state[key] = requested
    st.session_state[seen] = requested
    return requested


def window(c: Choice | None = None) -> tuple[int, int]:
    """(since, until) in epoch ms for the chosen range, with `until` rounded up to the refresh step."""
    c = c or choice()
    now = wall_ms()
    if c.range == CUSTOM:
        try:
            since = parse_time(c.start_text, now, "from")
            until = parse_time(c.end_text or "now", now, "to")
        except ConfigError:
            since, until = now - RANGES["1h"], now  # the sidebar already said what is wrong
        return min(since, until), max(since, until)
    step = int((c.refresh_s or 1) * 1000)
    until = math.ceil(now / step) * step  # the same key for one refresh: cache hits
    return until - RANGES.get(c.range, RANGES["1h"]), until


def valid_zone(name: str | None) -> str:
    if not name:
        return "UTC"
    try:
        ZoneInfo(name)
        return name
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"


def fmt_time(ms: int | None, tz: str | None = None) -> str:
    if ms is None:
        return "—"
    zone = ZoneInfo(tz or choice().tz)
    return datetime.fromtimestamp(ms / 1000, UTC).astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")


def fmt_time_zone(ms: int | None) -> str:
    return f"{fmt_time(ms)} {choice().tz}" if ms is not None else "—"


def time_columns(df: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """Epoch-ms columns -> text in the chosen zone (the column header names the zone)."""
    tz = choice().tz
    for col in columns:
        df[col] = [fmt_time(v if pd.notna(v) else None, tz) for v in df[col]]
    return df.rename(columns={c: f"{c} ({tz})" for c in columns})


def redact(text: str) -> str:
    """An error message with any URL's password and any password=... setting hidden."""
    text = re.sub(r"(://[^/\s:@]*:)[^@\s/]+@", r"\1***@", text)
    return re.sub(r"(?i)(password\s*[=:]\s*)[^\s;&,]+", r"\1***", text)


def md(text: str) -> str:
    """A name (cluster, group, ...) made safe to put inside Markdown: shown as typed, never as markup."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$])", r"\\\1", str(text))


def table(df: pd.DataFrame, key: str, **kwargs):
    """A dataframe without its index (names stay text: no HTML anywhere). Its CSV download is the one in
    Streamlit's own toolbar over the table: a button of ours beside it would be a second copy. That
    download holds the cells as shown, so they are shown spreadsheet-safe."""
    return st.dataframe(spreadsheet_safe(df), hide_index=True, key=key, **kwargs)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with each text cell a spreadsheet would run as a formula (=, +, -, @ first: a group named
    =HYPERLINK(...)) behind a leading ', which spreadsheets read as "this is text" (OWASP's advice)."""

    def risky(v) -> bool:
        return isinstance(v, str) and v.startswith(_FORMULA_START) and not _NUMBER.fullmatch(v)

    out = df
    for column in df.columns:
        if df[column].dtype == object and (mask := df[column].map(risky)).any():
            out = df.copy() if out is df else out
            out[column] = df[column].where(~mask, "'" + df[column].astype(str))
    return out


def live(body) -> None:
    """Run `body` as a fragment that reruns every refresh interval (not at all when paused)."""

    @functools.wraps(body)  # Streamlit tells fragments apart by the function's name
    def guarded() -> None:
        run_guarded(body)

    st.fragment(guarded, run_every=choice().refresh_s)()


def run_guarded(body: Callable[[], None]) -> None:
    """Run `body`; if it fails, the viewer gets one line and the dashboard's log the traceback, which may
    hold SQL, file paths and host names that a viewer must not see."""
    try:
        body()
    except Exception as e:  # Streamlit's own st.stop / st.rerun are BaseExceptions and pass through
        get_logger("dashboard").error("%s failed", getattr(body, "__qualname__", "a page"), exc_info=True)
        st.error(f"This part of the page could not be shown ({type(e).__name__}); details in the dashboard's log.")


def page_params(**extra: str) -> dict[str, str]:
    """Query parameters that keep the cluster, range and zone when linking to another page."""
    c = choice()
    params = {"cluster": c.cluster, "range": c.range}
    if c.range == CUSTOM:
        params.update({"from": c.start_text, "to": c.end_text})
    params.update(extra)
    return params


def fmt_count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"
