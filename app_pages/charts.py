"""DataFrame -> altair.Chart builders for the dashboard (no Streamlit here: pure and testable).

Times arrive as epoch ms UTC and are turned into naive wall-clock datetimes in
the viewer's chosen zone (`to_wall_clock`): Vega-Lite reads a zone-less time as
the browser's local time and shows it back unchanged, so the chart shows the
chosen zone's clock whatever zone the browser is in. Axis titles name the zone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import altair as alt
import pandas as pd

_HEIGHT = 220
# Every time chart reserves the same width for its y axis and puts its legend
# below, so charts drawn one under another have their time axes aligned.
_AXIS_PX = 170
_LEGEND = alt.Legend(orient="bottom", columns=4, labelLimit=260)


def _y_axis(**kw) -> alt.Axis:
    return alt.Axis(minExtent=_AXIS_PX, maxExtent=_AXIS_PX, labelLimit=_AXIS_PX - 10, **kw)


def to_wall_clock(ms: Iterable[int | None] | pd.Series, tz: str) -> pd.Series:
    """Epoch ms UTC -> naive datetimes showing the clock in zone `tz` (None stays NaT).

    Goes through nullable integers, not floats (what a column with None becomes):
    pandas converts floats under np.errstate(over="raise"), and one benchmark run
    failed on the Rebalances page with "overflow encountered in multiply" (not
    reproduced since, so the cause is not proven to be here).
    """
    ints = pd.array([None if v is None or pd.isna(v) else int(v) for v in ms], dtype="Int64")
    stamps = pd.Series(pd.to_datetime(ints, unit="ms", utc=True))
    return stamps.dt.tz_convert(tz).dt.tz_localize(None)


def compute_time_format(span_s: float | None) -> str:
    """Labels that differ from tick to tick: the date past a day, seconds within ten minutes (whose ticks
    are seconds apart: in minutes they would all read the same)."""
    if span_s is not None and span_s > 86_400:
        return "%m-%d %H:%M"
    if span_s is not None and span_s <= 600:
        return "%H:%M:%S"
    return "%H:%M"


def _x(
    field: str, tz: str, domain: Sequence[datetime] | None, title: str | None = None, span_s: float | None = None
) -> alt.X:
    """A time axis in 24-hour clock, titled with the zone; its span is the domain's, else `span_s` (the data's)."""
    scale = alt.Scale(domain=[d.isoformat() for d in domain]) if domain else alt.Undefined
    if domain:
        span_s = (domain[1] - domain[0]).total_seconds()
    axis = alt.Axis(format=compute_time_format(span_s), labelOverlap=True)
    return alt.X(f"{field}:T", title=title or f"time ({tz})", scale=scale, axis=axis)


def build_lag_chart(points: pd.DataFrame, by: str, tz: str, domain: Sequence[datetime] | None = None) -> alt.Chart:
    """Lag over time, one line per topic (summed over its partitions) or per partition.

    `points` has columns at (epoch ms), topic, partition, lag.
    """
    if by not in ("topic", "partition"):
        raise ValueError(f"by must be 'topic' or 'partition', not {by!r}")
    df = points.dropna(subset=["lag"]).copy()
    if by == "topic":
        df = df.groupby(["at", "topic"], as_index=False)["lag"].sum()
        df["series"] = df["topic"]
    else:
        df["series"] = df["topic"] + "-" + df["partition"].astype(str)
    df["time"] = to_wall_clock(df["at"], tz).values
    return (
        alt.Chart(df[["time", "series", "lag"]], height=_HEIGHT)
        .mark_line(interpolate="step-after")
        .encode(
            x=_x("time", tz, domain),
            y=alt.Y("lag:Q", title="lag (offsets)", axis=_y_axis()),
            color=alt.Color("series:N", title=by, legend=_LEGEND),
            tooltip=[alt.Tooltip("time:T", format="%Y-%m-%d %H:%M:%S"), "series:N", "lag:Q"],
        )
    )


def build_total_lag_chart(points: pd.DataFrame, tz: str, domain: Sequence[datetime] | None = None) -> alt.Chart:
    """One line: the group's total lag (columns at, lag), to sit under the rebalance timeline."""
    df = points.dropna(subset=["lag"]).groupby("at", as_index=False)["lag"].sum()
    df["time"] = to_wall_clock(df["at"], tz).values
    return (
        alt.Chart(df[["time", "lag"]], height=160)
        .mark_area(line=True, opacity=0.3, interpolate="step-after")
        .encode(
            x=_x("time", tz, domain),
            y=alt.Y("lag:Q", title="total lag", axis=_y_axis()),
            tooltip=[alt.Tooltip("time:T", format="%Y-%m-%d %H:%M:%S"), "lag:Q"],
        )
    )


def build_rebalance_timeline_chart(rows: pd.DataFrame, tz: str, domain: Sequence[datetime] | None = None) -> alt.Chart:
    """Each rebalance as a bar from start to end on its group's row; joins ▲ and leaves ▼ at the start.

    `rows` has columns group, started_at, ended_at (ms; None = in progress, drawn to
    `domain`'s end), trigger, joined, left (counts), moved, generation.
    """
    df = rows.copy()
    df["start"] = to_wall_clock(df["started_at"], tz).values
    end = to_wall_clock(df["ended_at"], tz)
    if domain:
        end = end.fillna(pd.Timestamp(domain[1]))
    df["end"] = end.fillna(df["start"]).values
    tooltip = [
        alt.Tooltip("group:N"),
        alt.Tooltip("start:T", format="%Y-%m-%d %H:%M:%S"),
        alt.Tooltip("end:T", format="%Y-%m-%d %H:%M:%S"),
        "trigger:N",
        "joined:Q",
        "left:Q",
        "moved:Q",
        "generation:N",
    ]
    columns = ["group", "start", "end", "trigger", "joined", "left", "moved", "generation"]
    base = alt.Chart(df[columns])
    bars = base.mark_bar(size=14).encode(
        x=_x("start", tz, domain),
        x2="end:T",
        y=alt.Y("group:N", title="group", axis=_y_axis()),
        color=alt.Color("trigger:N", legend=_LEGEND),
        tooltip=tooltip,
    )
    joins = (
        base.transform_filter("datum.joined > 0")
        .mark_point(shape="triangle-up", filled=True, size=70, color="#2a9d8f")
        .encode(x="start:T", y="group:N", tooltip=tooltip)
    )
    leaves = (
        base.transform_filter("datum.left > 0")
        .mark_point(shape="triangle-down", filled=True, size=70, color="#e76f51", yOffset=0)
        .encode(x="end:T", y="group:N", tooltip=tooltip)
    )
    return alt.layer(bars, joins, leaves).properties(height=alt.Step(24))


def build_assignment_heatmap_chart(spans: pd.DataFrame, tz: str, domain: Sequence[datetime]) -> alt.Chart:
    """Partition x time, coloured by owner: a colour change on a row is a partition moving.

    `spans` has columns topic, partition, owner, valid_from, valid_to (ms; None = still
    owned); spans are clipped to `domain`.
    """
    df = spans.copy()
    df["partition_label"] = df["topic"] + "-" + df["partition"].astype(str)
    df["start"] = to_wall_clock(df["valid_from"], tz).clip(lower=pd.Timestamp(domain[0])).values
    df["end"] = (
        to_wall_clock(df["valid_to"], tz).fillna(pd.Timestamp(domain[1])).clip(upper=pd.Timestamp(domain[1])).values
    )
    return (
        alt.Chart(df[["partition_label", "owner", "start", "end"]], height=alt.Step(20))
        .mark_bar(size=12)
        .encode(
            x=_x("start", tz, domain),
            x2="end:T",
            y=alt.Y(
                "partition_label:N", title="partition", sort=sorted(df["partition_label"].unique()), axis=_y_axis()
            ),
            color=alt.Color("owner:N", title="owner (client id)", legend=_LEGEND),
            tooltip=[
                "partition_label:N",
                "owner:N",
                alt.Tooltip("start:T", format="%Y-%m-%d %H:%M:%S"),
                alt.Tooltip("end:T", format="%Y-%m-%d %H:%M:%S"),
            ],
        )
    )


def build_cycle_time_chart(cycles: pd.DataFrame, tz: str) -> alt.Chart:
    """The collector's cycle time over the window: the whole cycle and its sampling part.

    `cycles` has columns at, whole_ms, sampling_ms (None on cycles stored before the split).
    """
    df = cycles.melt(id_vars=["at"], value_vars=["whole_ms", "sampling_ms"], var_name="part", value_name="ms")
    df = df.dropna(subset=["ms"])
    df["part"] = df["part"].map({"whole_ms": "whole cycle", "sampling_ms": "sampling Kafka"})
    df["time"] = to_wall_clock(df["at"], tz).values
    return (
        alt.Chart(df[["time", "part", "ms"]], height=200)
        .mark_line(point=len(cycles) < 60)
        .encode(
            x=_x("time", tz, None, span_s=(df["time"].max() - df["time"].min()).total_seconds() if len(df) else None),
            y=alt.Y("ms:Q", title="cycle time (ms)", axis=_y_axis()),
            color=alt.Color("part:N", title=None, sort=["whole cycle", "sampling Kafka"]),
            tooltip=[alt.Tooltip("time:T", format="%Y-%m-%d %H:%M:%S"), "part:N", "ms:Q"],
        )
    )


STATUS_COLOURS = {
    "OK": "#2a9d8f",
    "WARN": "#e9c46a",
    "ERR": "#e76f51",
    "STOP": "#9b2226",
    "STALL": "#7b2cbf",
    "REWIND": "#457b9d",
}


def build_status_history_chart(spans: pd.DataFrame, tz: str, domain: Sequence[datetime]) -> alt.Chart:
    """Health over time: one row for the group and one per partition, coloured by status.

    `spans` has columns series, status (a Status name), valid_from, valid_to (ms; None =
    still in force); spans are clipped to `domain`.
    """
    df = spans.copy()
    df["start"] = to_wall_clock(df["valid_from"], tz).clip(lower=pd.Timestamp(domain[0])).values
    df["end"] = (
        to_wall_clock(df["valid_to"], tz).fillna(pd.Timestamp(domain[1])).clip(upper=pd.Timestamp(domain[1])).values
    )
    df = df[df["end"] > df["start"]]
    order = list(dict.fromkeys(df["series"]))
    return (
        alt.Chart(df[["series", "status", "start", "end"]], height=alt.Step(20))
        .mark_bar(size=12)
        .encode(
            x=_x("start", tz, domain),
            x2="end:T",
            y=alt.Y("series:N", title="group / partition", sort=order, axis=_y_axis()),
            color=alt.Color(
                "status:N",
                title="status",
                legend=_LEGEND,
                scale=alt.Scale(domain=list(STATUS_COLOURS), range=list(STATUS_COLOURS.values())),
            ),
            tooltip=[
                "series:N",
                "status:N",
                alt.Tooltip("start:T", format="%Y-%m-%d %H:%M:%S"),
                alt.Tooltip("end:T", format="%Y-%m-%d %H:%M:%S"),
            ],
        )
    )


def build_trend_chart(trends: pd.DataFrame, tz: str) -> alt.VConcatChart:
    """One group's lag trend over the analysis buckets (avg, p95, max in offsets) above its
    produce and consume rates (messages/s), on one time axis.

    `trends` has columns bucket_start (epoch ms), lag_avg, lag_p95, lag_max, produce_rate, consume_rate.
    """
    df = trends.copy()
    df["time"] = to_wall_clock(df["bucket_start"], tz).values
    x = _x("time", tz, None, title=f"bucket start ({tz})")
    tooltip = [alt.Tooltip("time:T", format="%Y-%m-%d %H:%M:%S"), "series:N", alt.Tooltip("value:Q", format=",.1f")]
    names = {"lag_avg": "avg", "lag_p95": "p95", "lag_max": "max", "produce_rate": "produce", "consume_rate": "consume"}
    df = df.rename(columns=names)
    lag = df.melt(id_vars=["time"], value_vars=["avg", "p95", "max"], var_name="series").dropna()
    rates = df.melt(id_vars=["time"], value_vars=["produce", "consume"], var_name="series").dropna()
    point = len(df) < 60
    return alt.vconcat(
        alt.Chart(lag, height=_HEIGHT)
        .mark_line(point=point)
        .encode(
            x=x,
            y=alt.Y("value:Q", title="lag (offsets)", axis=_y_axis()),
            color=alt.Color("series:N", title="lag", legend=_LEGEND),
            tooltip=tooltip,
        ),
        alt.Chart(rates, height=_HEIGHT)
        .mark_line(point=point)
        .encode(
            x=x,
            y=alt.Y("value:Q", title="rate (messages/s)", axis=_y_axis()),
            color=alt.Color("series:N", title="rate", legend=_LEGEND),
            tooltip=tooltip,
        ),
    ).resolve_scale(color="independent")


# A share-partition's records from its start offset to the log end, by what has become of them.
SHARE_STATES = {
    "acknowledged": "#2a9d8f",
    "archived": "#8d99ae",  # rejected, or delivered too often: done, never processed
    "redelivering": "#e9c46a",  # delivered at least once, available again (released or lock timed out)
    "not yet acknowledged": "#e76f51",  # never delivered, or acquired by a member right now
}


def build_share_inflight_chart(parts: pd.DataFrame) -> alt.Chart:
    """One stacked bar per share-partition: its records after the start offset, by delivery state.

    `parts` has columns topic, partition, acknowledged, archived, redelivering and lag
    (Kafka's share lag; None: not known). What lag counts beyond the redelivering
    records is drawn as "not yet acknowledged": never delivered or in a member's hands
    now (Kafka does not persist Acquired). A partition whose lag is unknown shows its
    counts without that part.
    """
    df = parts.copy()
    df["partition_label"] = df["topic"] + "-" + df["partition"].astype(str)
    waiting = pd.to_numeric(df["lag"], errors="coerce") - df["redelivering"]
    df["not yet acknowledged"] = waiting.clip(lower=0)
    long = df.melt(
        id_vars=["partition_label"], value_vars=list(SHARE_STATES), var_name="state", value_name="records"
    ).dropna(subset=["records"])
    long = long[long["records"] > 0]
    long["order"] = long["state"].map({s: i for i, s in enumerate(SHARE_STATES)})
    return (
        alt.Chart(long, height=alt.Step(20))
        .mark_bar(size=14)
        .encode(
            x=alt.X(
                "records:Q",
                title="records after the start offset",
                stack="zero",
                axis=alt.Axis(tickMinStep=1, format="d"),  # whole records
            ),
            y=alt.Y("partition_label:N", title="share-partition", sort=list(dict.fromkeys(df["partition_label"]))),
            color=alt.Color(
                "state:N",
                title="delivery state",
                legend=_LEGEND,
                sort=list(SHARE_STATES),
                scale=alt.Scale(domain=list(SHARE_STATES), range=list(SHARE_STATES.values())),
            ),
            order=alt.Order("order:Q"),
            tooltip=["partition_label:N", "state:N", alt.Tooltip("records:Q", format=",d")],
        )
    )
