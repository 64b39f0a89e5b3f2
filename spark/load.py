"""Load: result rows back into the store, and the run's ledger row, in one transaction.

Idempotent by construction: every recomputed bucket is deleted and inserted
again (whole buckets only, epoch-aligned, so a re-run writes the same rows),
and the run's watermark commits together with them. Through SQLAlchemy from
the driver: results are small (buckets, not samples), and one transaction is
what makes "no gap, no double count" hold on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.clock import wall_ms
from monitor.store import write_engine
from monitor.store.schema import analysis_runs, lag_trends, rebalance_protocols, rebalance_ranking, rebalance_stats

INSERT_CHUNK = 5000


@dataclass(frozen=True)
class Results:
    """What one run computed, as plain dict rows, and which buckets it replaces."""

    trends: list[dict]
    rebalance_stats: list[dict]
    ranking: list[dict]
    protocols: list[dict]
    trend_ranges: dict[str, tuple[int, int]]  # window -> [first, last] bucket_start replaced
    rebalance_ranges: dict[str, tuple[int, int]]

    @property
    def rows(self) -> int:
        return len(self.trends) + len(self.rebalance_stats) + len(self.ranking) + len(self.protocols)


@dataclass(frozen=True)
class RunRecord:
    started_at: int
    watermark: int
    rows_read: int
    range_start: int | None
    range_end: int | None
    master: str


def _replace(conn, table: sa.Table, ranges: dict[str, tuple[int, int]], rows: list[dict]) -> None:
    for window, (first, last) in ranges.items():
        conn.execute(
            table.delete().where(table.c.window == window, table.c.bucket_start >= first, table.c.bucket_start <= last)
        )
    _insert(conn, table, rows)


def _insert(conn, table: sa.Table, rows: list[dict]) -> None:
    for i in range(0, len(rows), INSERT_CHUNK):
        conn.execute(table.insert(), rows[i : i + INSERT_CHUNK])


def write_results(engine: Engine, run: RunRecord, results: Results, run_id: int | None = None) -> int:
    """Replace the recomputed buckets and record the run as 'ok' (its watermark now counts); the run id."""
    finished = wall_ms()
    with write_engine(engine).begin() as conn:
        run_id = conn.execute(
            analysis_runs.insert().values(
                started_at=run.started_at,
                finished_at=finished,
                status="ok",
                watermark=run.watermark,
                rows_read=run.rows_read,
                rows_written=results.rows,
                range_start=run.range_start,
                range_end=run.range_end,
                duration_ms=finished - run.started_at,
                master=run.master,
            )
        ).inserted_primary_key[0]
        stamp = lambda rows: [{**r, "run_id": run_id} for r in rows]  # noqa: E731
        _replace(conn, lag_trends, results.trend_ranges, stamp(results.trends))
        _replace(conn, rebalance_stats, results.rebalance_ranges, stamp(results.rebalance_stats))
        # Rankings describe "the day before the newest data": each run's replaces the last one whole.
        for table, rows in ((rebalance_ranking, results.ranking), (rebalance_protocols, results.protocols)):
            conn.execute(table.delete())
            _insert(conn, table, stamp(rows))
    return run_id


def write_failed_run(engine: Engine, run: RunRecord, previous_watermark: int, error: str) -> None:
    """Record a failed run; the watermark stays where it was, so the next run re-reads the same rows."""
    finished = wall_ms()
    with write_engine(engine).begin() as conn:
        conn.execute(
            analysis_runs.insert().values(
                started_at=run.started_at,
                finished_at=finished,
                status="failed",
                watermark=previous_watermark,
                rows_read=0,
                rows_written=0,
                range_start=run.range_start,
                range_end=run.range_end,
                duration_ms=finished - run.started_at,
                master=run.master,
                error=error[:2000],
            )
        )
