"""`analyze`, `trends` and `rebalance-stats`: the Spark analysis and its results."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json

from monitor.cli.common import open_store
from monitor.clock import wall_ms
from monitor.config import load_settings, parse_time
from monitor.models import LagmonError
from monitor.output import fmt_duration, fmt_time, render_json, render_table


def cmd_analyze(args: argparse.Namespace) -> int:
    for module in ("pyspark", "spark"):  # the collector-only image has neither
        if importlib.util.find_spec(module) is None:
            raise LagmonError(
                f"analyze needs PySpark and lagmon's spark/ (there is no {module} here): run it from the full "
                "image, or where requirements.txt is installed"
            )
    from spark.main import run  # lazy: PySpark, and absent from the collector-only image

    return run(args)


def _eta(seconds: float | None, catching_up: bool | None) -> str | None:
    if catching_up is None:
        return None
    return fmt_duration(int(seconds * 1000)) if catching_up and seconds is not None else "not catching up"


def _num(x: float | None, digits: int = 1) -> str | None:
    return None if x is None else f"{x:.{digits}f}"


def cmd_trends(args: argparse.Namespace) -> int:
    from monitor.store import read_last_analysis, read_trends  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    engine = open_store(load_settings().store.database_url)
    since = parse_time(args.since, wall_ms(), "--since") if args.since else None
    topic = None if args.topics else ""
    rows = read_trends(engine, args.cluster, args.group, args.window, topic, since)
    if not args.since and not args.json:  # the newest bucket of each series is what people ask for
        newest = {}
        for r in rows:
            newest[(r.cluster, r.group_id, r.topic)] = r
        rows = list(newest.values())
    if args.json:
        print(render_json([dataclasses.asdict(r) for r in rows]))
        return 0
    print(
        render_table(
            [
                {
                    "CLUSTER": r.cluster,
                    "GROUP": r.group_id,
                    "TOPIC": r.topic or "(all)",
                    "WINDOW": r.window,
                    "FROM (UTC)": fmt_time(r.bucket_start),
                    "SAMPLES": r.samples,
                    "LAG-AVG": _num(r.lag_avg, 0),
                    "LAG-P95": _num(r.lag_p95, 0),
                    "LAG-MAX": r.lag_max,
                    "SLOPE/MIN": _num(r.lag_slope_per_min),
                    "PRODUCE/S": _num(r.produce_rate),
                    "CONSUME/S": _num(r.consume_rate),
                    "ETA": _eta(r.catch_up_eta_s, r.catching_up),
                    "LAG-S-P95": (_num(r.lag_seconds_p95) or "-") + (">" if r.lag_seconds_bounded else ""),
                }
                for r in rows
            ],
            "no trends yet: run `python -m monitor analyze` (after the collector has run)",
        )
    )
    last = read_last_analysis(engine)
    if last:
        print(f"last analysis: {fmt_time(last.finished_at)} UTC ({last.status}); '>' marks a lower bound")
    return 0


def cmd_rebalance_stats(args: argparse.Namespace) -> int:
    from monitor.store import (  # lazy: SQLAlchemy (monitor/cli/__init__.py)
        read_protocol_comparison,
        read_rebalance_stats,
        read_stability_ranking,
    )

    engine = open_store(load_settings().store.database_url)
    stats = read_rebalance_stats(engine, args.cluster, args.group, args.window)
    ranking = [r for r in read_stability_ranking(engine, args.cluster) if args.group in (None, r.group_id)]
    protocols = read_protocol_comparison(engine, args.cluster)
    if args.json:
        print(
            json.dumps(
                {
                    "stats": [dataclasses.asdict(r) for r in stats],
                    "ranking": [dataclasses.asdict(r) for r in ranking],
                    "protocols": [dataclasses.asdict(r) for r in protocols],
                },
                default=str,
            )
        )
        return 0
    top = lambda items: ",".join(f"{i['name']}({i['rebalances']})" for i in items) or None  # noqa: E731
    print(
        render_table(
            [
                {
                    "CLUSTER": r.cluster,
                    "GROUP": r.group_id,
                    "WINDOW": r.window,
                    "FROM (UTC)": fmt_time(r.bucket_start),
                    "PROTOCOL": r.protocol,
                    "REBALANCES": r.rebalances,
                    "TOTAL": fmt_duration(r.total_duration_ms),
                    "MEAN": fmt_duration(None if r.mean_duration_ms is None else int(r.mean_duration_ms)),
                    "P95": fmt_duration(None if r.p95_duration_ms is None else int(r.p95_duration_ms)),
                    "MOVED": r.partitions_moved,
                    "JOINED": r.members_joined,
                    "LEFT": r.members_left,
                    "TOP-CLIENTS": top(r.top_clients),
                    "TOP-HOSTS": top(r.top_hosts),
                }
                for r in stats
            ],
            "no rebalance statistics yet: run `python -m monitor analyze`",
        )
    )
    if ranking:
        print("\nleast stable groups, last day:")
        print(
            render_table(
                [
                    {
                        "RANK": r.rank,
                        "CLUSTER": r.cluster,
                        "GROUP": r.group_id,
                        "PROTOCOL": r.protocol,
                        "REBALANCES": r.rebalances,
                        "PER-HOUR": _num(r.per_hour, 2),
                        "STOPPED": fmt_duration(r.total_duration_ms),
                        "WINDOW (UTC)": f"{fmt_time(r.window_start)} .. {fmt_time(r.window_end)}",
                    }
                    for r in ranking
                ],
                "",
            )
        )
    if protocols and not args.group:
        print("\nby protocol, last day:")
        print(
            render_table(
                [
                    {
                        "CLUSTER": p.cluster,
                        "PROTOCOL": p.protocol,
                        "GROUPS": p.groups,
                        "REBALANCES": p.rebalances,
                        "PER-GROUP": _num(p.per_group),
                        "MEAN": fmt_duration(None if p.mean_duration_ms is None else int(p.mean_duration_ms)),
                        "P95": fmt_duration(None if p.p95_duration_ms is None else int(p.p95_duration_ms)),
                        "MOVED-AVG": _num(p.mean_partitions_moved),
                    }
                    for p in protocols
                ],
                "",
            )
        )
    return 0
