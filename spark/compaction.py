"""Compaction: a day's small history batches merged into one folder, so reading a day stays a few files.

Every run appends one batch folder per dataset (spark/extract.py), and a run reads the whole current
day of sample totals and hours of offsets: at `--every 20s` a day holds 4,320 folders of a few rows
each. With 1,000 of them per dataset a small warm run took 23-38 s instead of 4.6-9.4 (a store of 100
group-partitions). So once a day folder holds COMPACT_AT batches that no compaction wrote, they are
merged into one folder, marked as merged; once it holds COMPACT_AT merged ones, those are merged too.
So a day holds fewer than 2 x COMPACT_AT folders. A run that merges pays ~3 s more (three small jobs,
one per dataset); a day folder of 1,000 batches, as an install upgraded late in a day may have, once
~70 s. Figures: docs/architecture.md §8.

A merge is crash-safe without a second system: the rows are written under COMPACTING (a name Spark's
listing skips), then the list of folders they replace; then those folders are deleted and COMPACTING
takes the newest one's name (batch ids are committed sample ids, so the merged folder stays committed).
A run that died part-way is finished by the next (finish_compactions) before it reads: a COMPACTING
folder with its list rolls forward, one without is deleted. Only the analysis reads the history, and
one analysis runs at a time.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from spark.extract import DATASET_SCHEMAS

# Batch folders of one kind in a day folder that are merged into one. Below 32: Spark lists more paths than
# that with a job of its own (spark.sql.sources.parallelPartitionDiscovery.threshold), and a merge of 41
# folders per dataset cost ~7.5 s instead of ~3 s for 17.
COMPACT_AT = 16
COMPACTING = "_compacting"
REPLACES = "_replaces"  # in COMPACTING: the batch ids its rows are the union of, once they are all written
MERGED = "_merged"  # in a folder a compaction wrote


def compact_history(spark: SparkSession, history_dir: str, days: list[str]) -> int:
    """Merge the given day folders' batches where COMPACT_AT have piled up; how many merges ran."""
    fs = _filesystem(spark, history_dir)
    merges = 0
    for dataset in DATASET_SCHEMAS:
        for day in days:
            folder = f"{history_dir}/{dataset}/day={day}"
            batches = _batches(spark, fs, folder)
            for merged in (False, True):
                ids = sorted(b for b, m in batches.items() if m is merged)
                if len(ids) >= COMPACT_AT:
                    _merge(spark, fs, folder, dataset, ids)
                    batches = {**{b: m for b, m in batches.items() if b not in ids}, ids[-1]: True}
                    merges += 1
    return merges


def finish_compactions(spark: SparkSession, history_dir: str) -> int:
    """Roll forward (or back) every merge a run left unfinished; how many there were."""
    jvm = spark._jvm
    fs = _filesystem(spark, history_dir)
    found = 0
    for dataset in DATASET_SCHEMAS:
        for status in fs.globStatus(jvm.org.apache.hadoop.fs.Path(f"{history_dir}/{dataset}/day=*/{COMPACTING}")) or []:
            folder = str(status.getPath().getParent().toUri())
            found += 1
            if fs.exists(_path(spark, f"{folder}/{COMPACTING}/{REPLACES}")):
                _swap_in(spark, fs, folder, _read_ids(spark, fs, folder))
            else:
                fs.delete(_path(spark, f"{folder}/{COMPACTING}"), True)
    return found


def _merge(spark: SparkSession, fs, folder: str, dataset: str, ids: list[int]) -> None:
    staging = f"{folder}/{COMPACTING}"
    rows = spark.read.schema(DATASET_SCHEMAS[dataset]).parquet(*(f"{folder}/batch={b}" for b in ids))
    rows.coalesce(1).write.mode("overwrite").parquet(staging)
    _write_text(spark, fs, f"{staging}/{MERGED}", "")
    _write_text(spark, fs, f"{staging}/{REPLACES}", " ".join(map(str, ids)))  # the commit point
    _swap_in(spark, fs, folder, ids)


def _swap_in(spark: SparkSession, fs, folder: str, ids: list[int]) -> None:
    """Delete the replaced folders, then give the merged one the newest's name (its list goes last: while
    COMPACTING is there, the list is what tells the next run to finish rather than drop it)."""
    for b in ids:
        fs.delete(_path(spark, f"{folder}/batch={b}"), True)
    _rename(spark, fs, f"{folder}/{COMPACTING}", f"{folder}/batch={ids[-1]}")
    fs.delete(_path(spark, f"{folder}/batch={ids[-1]}/{REPLACES}"), False)


def _rename(spark: SparkSession, fs, source: str, target: str) -> None:
    if not fs.rename(_path(spark, source), _path(spark, target)):
        raise OSError(f"could not rename {source} to {target}")


def _batches(spark: SparkSession, fs, folder: str) -> dict[int, bool]:
    """A day folder's batch ids, each with whether a compaction wrote it."""
    path = _path(spark, folder)
    if not fs.exists(path):
        return {}
    out = {}
    for status in fs.listStatus(path):
        name = status.getPath().getName()
        if status.isDirectory() and name.startswith("batch="):
            out[int(name.split("=", 1)[1])] = fs.exists(_path(spark, f"{folder}/{name}/{MERGED}"))
    return out


def _read_ids(spark: SparkSession, fs, folder: str) -> list[int]:
    stream = fs.open(_path(spark, f"{folder}/{COMPACTING}/{REPLACES}"))
    try:
        text = spark._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()
    return [int(b) for b in text.split()]


def _write_text(spark: SparkSession, fs, path: str, text: str) -> None:
    stream = fs.create(_path(spark, path), True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def _filesystem(spark: SparkSession, history_dir: str):
    return _path(spark, history_dir).getFileSystem(spark._jsc.hadoopConfiguration())


def _path(spark: SparkSession, path: str):
    return spark._jvm.org.apache.hadoop.fs.Path(path)
