"""Steps sized to their data: small steps in one shuffle partition, without adaptive execution or generated code.

A run's steps range from a few thousand rows (an incremental run on a small
store) to the day's millions (a first run, the 1d bucket of a big store). With
adaptive execution and 8 shuffle partitions, a step over a few thousand rows
runs a Spark job per stage of tiny tasks; in one partition without adaptive
execution it runs as one job: about 1.5 s less per warm run on a small store
(bench/bench_analyze_small.py). Large steps keep adaptive execution and the
configured partitions (LAGMON_SPARK_SHUFFLE_PARTITIONS), which it coalesces.
Steps below an eighth of a partition also run Spark's expressions interpreted:
generated code is compiled anew for each run's new literals (Janino, then the
JVM's JIT), which cost a warm run on a small store more than the run itself
(~35 % of its CPU). From there on the rows cost more interpreted than the
compiling does: the time lag of 72,000 new rows took 2 s longer interpreted.
The results depend on neither (docs/architecture.md §8).
"""

from __future__ import annotations

BYTES_PER_PARTITION = 4 * 2**20  # of the history's Parquet: 500,000 sample totals, 800,000 offsets
OFFSETS_PER_PARTITION = 800_000  # of the store's rows, read by the extract
REBALANCES_PER_PARTITION = 200_000


def shuffle_plan(size: int, per_partition: int, most: int, cores: int = 1) -> tuple[int, bool]:
    """(shuffle partitions, adaptive execution on) for a step reading `size` (bytes or rows).

    More than one: a multiple of the cores (5 tasks on 2 cores take 3 rounds, as 6 do).
    """
    needed = -(-size // per_partition)
    if needed <= 1:
        return 1, False
    return min(most, -(-needed // cores) * cores), True


def compiled(size: int, per_partition: int) -> bool:
    """Whether a step reading `size` runs generated code: from an eighth of a partition on."""
    return size * 8 >= per_partition


def parquet_bytes(*frames) -> int:
    """The bytes of the files these history reads scan, from Spark's plan statistics (no job runs)."""
    return sum(int(f._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()) for f in frames)


def size_shuffles(spark, size: int, per_partition: int, most: int) -> None:
    """Set the next queries' shuffle partitions, adaptive execution and code generation (runtime settings)."""
    partitions, large = shuffle_plan(size, per_partition, most, spark.sparkContext.defaultParallelism)
    generated = compiled(size, per_partition)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    spark.conf.set("spark.sql.adaptive.enabled", str(large).lower())
    spark.conf.set("spark.sql.codegen.wholeStage", str(generated).lower())
    spark.conf.set("spark.sql.codegen.factoryMode", "FALLBACK" if generated else "NO_CODEGEN")
