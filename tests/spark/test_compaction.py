"""spark/compaction.py on a real history folder: a merge stopped before it wrote the list of the folders it
replaces (its commit point) is dropped by the next run, and no row is lost or read twice meanwhile.

A merge stopped after that point is tested with whole analysis runs, in test_job.py.
"""

from __future__ import annotations

import pytest

from spark import compaction
from spark.extract import GROUP_OFFSETS, GROUP_OFFSETS_SCHEMA, utc_day, write_batch

DAY_START = 1_795_910_400_000  # 2026-11-29 00:00 UTC
BATCHES = (11, 12, 13)


def history_rows(spark, history: str) -> list[tuple]:
    return sorted(map(tuple, spark.read.parquet(f"{history}/{GROUP_OFFSETS}").drop("day", "batch").collect()))


def test_a_merge_stopped_before_its_list_is_dropped_by_the_next_run_and_done_again(spark, tmp_path, monkeypatch):
    history, day = str(tmp_path / "history"), utc_day(DAY_START)
    for b in BATCHES:  # one batch folder per run, as extract.write_batch leaves them
        rows = [("c", "g", "t", p, b, DAY_START + b * 1000, b * 10 + p) for p in (0, 1)]
        write_batch(spark.createDataFrame(rows, GROUP_OFFSETS_SCHEMA), history, GROUP_OFFSETS, b)
    folder = tmp_path / "history" / GROUP_OFFSETS / f"day={day}"
    written = history_rows(spark, history)
    monkeypatch.setattr(compaction, "COMPACT_AT", len(BATCHES))
    write_text = compaction._write_text

    def stopped_at_the_list(spark, fs, path, text):
        if path.endswith(compaction.REPLACES):
            raise OSError("killed")
        write_text(spark, fs, path, text)

    monkeypatch.setattr(compaction, "_write_text", stopped_at_the_list)
    with pytest.raises(OSError, match="killed"):
        compaction.compact_history(spark, history, [day])
    assert list((folder / compaction.COMPACTING).glob("*.parquet")), "the merged rows were written"
    assert history_rows(spark, history) == written  # Spark's listing skips the half-done merge

    monkeypatch.setattr(compaction, "_write_text", write_text)
    assert compaction.finish_compactions(spark, history) == 1
    assert sorted(p.name for p in folder.iterdir()) == [f"batch={b}" for b in BATCHES]
    assert history_rows(spark, history) == written

    assert compaction.compact_history(spark, history, [day]) == 1
    assert sorted(p.name for p in folder.iterdir()) == [f"batch={BATCHES[-1]}"]
    assert history_rows(spark, history) == written
    assert compaction.finish_compactions(spark, history) == 0
