"""app_pages.charts: the data each chart draws and how it encodes it (via the Vega-Lite spec)."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest

from app_pages.charts import (
    build_assignment_heatmap_chart,
    build_cycle_time_chart,
    build_lag_chart,
    build_rebalance_timeline_chart,
    build_share_inflight_chart,
    build_status_history_chart,
    build_total_lag_chart,
    build_trend_chart,
    compute_time_format,
    to_wall_clock,
)

T0 = 1_800_000_000_000  # 2027-01-15 08:00:00 UTC
DOMAIN = [datetime(2027, 1, 15, 8, 0), datetime(2027, 1, 15, 9, 0)]


def values(chart) -> list[dict]:
    spec = chart.to_dict()
    (rows,) = spec["datasets"].values()
    return rows


def lag_points() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"at": T0, "topic": "a", "partition": 0, "lag": 5},
            {"at": T0, "topic": "a", "partition": 1, "lag": 7},
            {"at": T0, "topic": "b", "partition": 0, "lag": None},  # nothing committed: not drawn
            {"at": T0 + 10_000, "topic": "a", "partition": 0, "lag": 1},
            {"at": T0 + 10_000, "topic": "a", "partition": 1, "lag": 2},
        ]
    )


@pytest.mark.parametrize(
    "tz, expected",
    [
        ("UTC", "2027-01-15 08:00:00"),
        ("Europe/Berlin", "2027-01-15 09:00:00"),
        ("America/New_York", "2027-01-15 03:00:00"),
    ],
)
def test_wall_clock_shows_the_zones_time(tz, expected):
    assert str(to_wall_clock([T0], tz)[0]) == expected
    assert to_wall_clock([None], tz).isna().all()


def test_lag_by_topic_sums_partitions_and_skips_unknown_lag():
    rows = values(build_lag_chart(lag_points(), "topic", "UTC"))
    assert [(r["time"], r["series"], r["lag"]) for r in rows] == [
        ("2027-01-15T08:00:00", "a", 12),
        ("2027-01-15T08:00:10", "a", 3),
    ]


def test_lag_by_partition_has_one_series_each_and_names_the_zone():
    chart = build_lag_chart(lag_points(), "partition", "Europe/Berlin", DOMAIN)
    assert sorted({r["series"] for r in values(chart)}) == ["a-0", "a-1"]
    x = chart.to_dict()["encoding"]["x"]
    assert x["title"] == "time (Europe/Berlin)"
    assert x["scale"]["domain"] == ["2027-01-15T08:00:00", "2027-01-15T09:00:00"]


def test_lag_chart_rejects_an_unknown_grouping():
    with pytest.raises(ValueError, match="by must be"):
        build_lag_chart(lag_points(), "member", "UTC")


def test_total_lag_is_one_line():
    rows = values(build_total_lag_chart(lag_points()[["at", "lag"]], "UTC"))
    assert [r["lag"] for r in rows] == [12, 3]


def test_timeline_draws_in_progress_rebalances_to_the_window_end():
    rows = pd.DataFrame(
        [
            {
                "group": "g",
                "started_at": T0 + 60_000,
                "ended_at": T0 + 80_000,
                "trigger": "member_joined",
                "joined": 1,
                "left": 0,
                "moved": 2,
                "generation": "3 → 4",
            },
            {
                "group": "g",
                "started_at": T0 + 120_000,
                "ended_at": None,
                "trigger": "unknown",
                "joined": 0,
                "left": 1,
                "moved": 0,
                "generation": "—",
            },
        ]
    )
    chart = build_rebalance_timeline_chart(rows, "UTC", DOMAIN)
    data = values(chart)
    assert [(r["start"], r["end"]) for r in data] == [
        ("2027-01-15T08:01:00", "2027-01-15T08:01:20"),
        ("2027-01-15T08:02:00", "2027-01-15T09:00:00"),
    ]
    marks = [
        layer["mark"]["shape"] if "shape" in layer["mark"] else layer["mark"]["type"]
        for layer in chart.to_dict()["layer"]
    ]
    assert marks == ["bar", "triangle-up", "triangle-down"]


def test_heatmap_clips_spans_to_the_window_and_colours_by_owner():
    spans = pd.DataFrame(
        [
            {"topic": "t", "partition": 0, "owner": "c1", "valid_from": T0 - 3_600_000, "valid_to": T0 + 600_000},
            {"topic": "t", "partition": 0, "owner": "c2", "valid_from": T0 + 600_000, "valid_to": None},
        ]
    )
    chart = build_assignment_heatmap_chart(spans, "UTC", DOMAIN)
    assert [(r["partition_label"], r["owner"], r["start"], r["end"]) for r in values(chart)] == [
        ("t-0", "c1", "2027-01-15T08:00:00", "2027-01-15T08:10:00"),
        ("t-0", "c2", "2027-01-15T08:10:00", "2027-01-15T09:00:00"),
    ]
    assert chart.to_dict()["encoding"]["color"]["field"] == "owner"


def test_cycle_time_chart_shows_the_whole_cycle_and_its_sampling_part_and_names_the_zone():
    cycles = pd.DataFrame({"at": [T0, T0 + 10_000], "whole_ms": [40, 55], "sampling_ms": [None, 20]})
    chart = build_cycle_time_chart(cycles, "Asia/Tokyo")
    assert [(r["time"], r["part"], r["ms"]) for r in values(chart)] == [
        ("2027-01-15T17:00:00", "whole cycle", 40),
        ("2027-01-15T17:00:10", "whole cycle", 55),
        ("2027-01-15T17:00:10", "sampling Kafka", 20),
    ]  # cycles from before the split have no sampling part
    assert chart.to_dict()["encoding"]["x"]["title"] == "time (Asia/Tokyo)"
    assert chart.to_dict()["encoding"]["x"]["axis"]["format"] == "%H:%M:%S"  # 10 s: minutes would all read 17:00


@pytest.mark.parametrize(
    "span_s, labels",
    [(180, "%H:%M:%S"), (600, "%H:%M:%S"), (3600, "%H:%M"), (86_400, "%H:%M"), (90_000, "%m-%d %H:%M")],
)
def test_time_labels_differ_from_tick_to_tick_whatever_the_span(span_s, labels):
    assert compute_time_format(span_s) == labels


def test_time_charts_reserve_the_same_axis_width_so_they_line_up():
    spans = pd.DataFrame(
        [{"topic": "a-very-long-topic-name", "partition": 0, "owner": "c", "valid_from": T0, "valid_to": None}]
    )
    charts = [
        build_total_lag_chart(lag_points()[["at", "lag"]], "UTC", DOMAIN),
        build_assignment_heatmap_chart(spans, "UTC", DOMAIN),
        build_lag_chart(lag_points(), "topic", "UTC", DOMAIN),
    ]
    extents = {
        (c.to_dict()["encoding"]["y"]["axis"]["minExtent"], c.to_dict()["encoding"]["y"]["axis"]["maxExtent"])
        for c in charts
    }
    assert len(extents) == 1 and next(iter(extents))[0] == next(iter(extents))[1]


def test_status_history_clips_to_the_window_drops_spans_outside_and_keeps_each_status_colour():
    spans = pd.DataFrame(
        [
            {"series": "group", "status": "OK", "valid_from": T0 - 7_200_000, "valid_to": T0 - 3_600_000},  # before
            {"series": "group", "status": "WARN", "valid_from": T0 - 3_600_000, "valid_to": T0 + 900_000},
            {"series": "group", "status": "OK", "valid_from": T0 + 900_000, "valid_to": None},
            {"series": "t-0", "status": "STALL", "valid_from": T0 + 1_800_000, "valid_to": None},
        ]
    )
    chart = build_status_history_chart(spans, "UTC", DOMAIN)
    assert [(r["series"], r["status"], r["start"], r["end"]) for r in values(chart)] == [
        ("group", "WARN", "2027-01-15T08:00:00", "2027-01-15T08:15:00"),
        ("group", "OK", "2027-01-15T08:15:00", "2027-01-15T09:00:00"),
        ("t-0", "STALL", "2027-01-15T08:30:00", "2027-01-15T09:00:00"),
    ]
    colour = chart.to_dict()["encoding"]["color"]["scale"]
    assert colour["domain"] == ["OK", "WARN", "ERR", "STOP", "STALL", "REWIND"]
    assert len(set(colour["range"])) == 6


def test_trend_chart_draws_lag_in_offsets_over_rates_in_messages_per_second_and_skips_unknowns():
    trends = pd.DataFrame(
        [
            {
                "bucket_start": T0,
                "lag_avg": 10.0,
                "lag_p95": 12.0,
                "lag_max": 15,
                "produce_rate": 2.0,
                "consume_rate": None,
            },  # no consume rate in the first bucket: not drawn
            {
                "bucket_start": T0 + 3_600_000,
                "lag_avg": 5.0,
                "lag_p95": 6.0,
                "lag_max": 8,
                "produce_rate": 2.5,
                "consume_rate": 3.0,
            },
        ]
    )
    spec = build_trend_chart(trends, "Europe/Berlin").to_dict()
    lag, rates = spec["vconcat"]
    assert (lag["encoding"]["y"]["title"], rates["encoding"]["y"]["title"]) == ("lag (offsets)", "rate (messages/s)")
    assert lag["encoding"]["x"]["title"] == "bucket start (Europe/Berlin)"
    drawn = {
        (r["time"], r["series"], r["value"])
        for rows in (spec["datasets"][lag["data"]["name"]], spec["datasets"][rates["data"]["name"]])
        for r in rows
    }
    assert {("2027-01-15T09:00:00", "max", 15), ("2027-01-15T10:00:00", "consume", 3.0)} <= drawn
    assert not any(s == "consume" and t == "2027-01-15T09:00:00" for t, s, _ in drawn)
    assert len(drawn) == 3 + 3 + 1 + 2


def test_share_inflight_stacks_each_partitions_records_by_state_and_leaves_out_unknown_lag():
    parts = pd.DataFrame(
        [
            {"topic": "jobs", "partition": 0, "acknowledged": 30, "archived": 2, "redelivering": 5, "lag": 12},
            {"topic": "jobs", "partition": 1, "acknowledged": 0, "archived": 0, "redelivering": 3, "lag": None},
        ]
    )
    chart = build_share_inflight_chart(parts)
    rows = {(r["partition_label"], r["state"]): r["records"] for r in values(chart)}
    assert rows == {
        ("jobs-0", "acknowledged"): 30,
        ("jobs-0", "archived"): 2,
        ("jobs-0", "redelivering"): 5,
        ("jobs-0", "not yet acknowledged"): 7,  # lag 12 less the 5 available again
        ("jobs-1", "redelivering"): 3,  # lag not known: no "not yet acknowledged" part, no zero bars
    }
    spec = chart.to_dict()
    assert spec["encoding"]["x"]["title"] == "records after the start offset"
    assert (spec["encoding"]["x"]["axis"]["tickMinStep"], spec["encoding"]["x"]["axis"]["format"]) == (1, "d")
    assert spec["encoding"]["color"]["scale"]["domain"] == [
        "acknowledged",
        "archived",
        "redelivering",
        "not yet acknowledged",
    ]
