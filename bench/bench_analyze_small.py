"""The analysis on a small store as the user runs it: `python -m monitor analyze --every 20s`, from outside.

A small store is what most installations have most of the time, and there
Spark's fixed costs (JVM start, job planning, Parquet listing) are the whole
run. This builds a synthetic store (bench/synth_store.py: --group-partitions x
60 samples of 10 s), starts the real command as a child (local[2]) and measures:
  first run, cold JVM = process start -> its first "done" line (wall: imports,
                        JVM start, extract, history, trends, load)
  warm incremental    = each later run's own figure ("analyze [X s] done"), after
                        10 new samples (--group-partitions x 10 rows) were
                        appended while the child waited
  CPU, peak RSS       = of the child's process tree (Python and its JVM), from
                        /proc at each run's end: CPU seconds up to the first run's
                        end and per 20 s cycle after it; each process's peak RSS
  --history-days N    = before the incremental runs, N older days of 288 batches
                        each (a month of `--every 5m` at N=30) are added to the
                        history (hard links to the first run's files), as the
                        history of a long-running install holds them
  peer                = pandas_trends (bench/bench_spark.py): one process reading
                        the whole store with sqlite3 and computing the same lag
                        trends, timed in this process on the final store
  --live              = instead of a synthetic store, the number users see: a dev
                        cluster, `sim mixed` producing and consuming (as `make
                        demo` runs it), `collect --interval 2s` filling the store,
                        and `analyze --every 20s` started beside them once the
                        collector has stored LIVE_WARM_S of cycles; CPU and RSS
                        are of the analysis alone
Targets (issue: analysis cost that follows the data): first run <= 15 s,
warm incremental <= 5 s; beside a live collector (issue 33): first run <= 12 s,
warm incremental <= 3 s median and <= 5 s worst.

    PYTHONPATH=. .venv/bin/python bench/bench_analyze_small.py [--group-partitions 100] [--runs 8] [--live]
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_spark import pandas_trends  # noqa: E402
from proc_usage import tree_usage  # noqa: E402
from synth_store import build  # noqa: E402

from monitor import devcluster  # noqa: E402

DONE = re.compile(r" analyze: \[\s*(\d+(?:\.\d+)?)s\] done: run (\d+).* (\d+) Spark jobs")  # its log, on stderr
FIRST_LIMIT_S, WARM_LIMIT_S = 15.0, 5.0
LIVE_FIRST_LIMIT_S, LIVE_WARM_LIMIT_S, LIVE_WORST_LIMIT_S = 12.0, 3.0, 5.0
LIVE_WARM_S = 30.0  # of collector cycles stored before the analysis starts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--group-partitions", type=int, default=100, help="x 10 = new rows per incremental run")
    parser.add_argument("--runs", type=int, default=8, help="incremental runs measured after the first")
    parser.add_argument("--history-days", type=int, default=0, help="older days of 288 batches in the history")
    parser.add_argument("--live", action="store_true", help="beside a dev cluster, `sim mixed` and `collect`")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-analyze-") as work:
        db = f"{work}/lagmon.db"
        env = {
            **os.environ,
            "LAGMON_DATABASE_URL": f"sqlite:///{db}",
            "LAGMON_HISTORY_DIR": f"{work}/history",
            "LAGMON_SPARK_MASTER": "local[2]",
        }
        if args.live:
            first_s, warm, usage, last_run, jobs = beside_a_live_collector(Path(work), env, args.runs)
            what = f"beside a live collector (`collect --interval 2s`, `sim mixed`, {LIVE_WARM_S:g} s of cycles first)"
            limits = (LIVE_FIRST_LIMIT_S, LIVE_WARM_LIMIT_S, LIVE_WORST_LIMIT_S)
        else:
            store = build(db, args.group_partitions, 60)

            def first_done() -> None:
                folders = pad_history(Path(work) / "history", args.history_days)
                if folders:
                    print(
                        f"history padded with {folders:,} batch folders of {args.history_days} older days", flush=True
                    )

            # each batch lands before the child's next run, 20 s after the last one's start
            first_s, warm, usage, last_run, jobs = watch_analysis(env, args.runs, first_done, lambda: store.append(10))
            rows = args.group_partitions * 10 * 2
            what = (
                f"small store: {args.group_partitions} group-partitions, 60 samples then +10 per run "
                f"({rows:,} new rows per run: offsets and log ends); {args.history_days} older days of history"
            )
            limits = (FIRST_LIMIT_S, WARM_LIMIT_S, None)
        _, pandas_s = timed(lambda: pandas_trends(db))
    print_report(what, limits, first_s, warm, jobs, usage, pandas_s)
    print("  the last run's own log (its steps, with the seconds since the run began):")
    for line in last_run:
        print(f"    {line}")
    return 0


def watch_analysis(env: dict, runs: int, first_done=lambda: None, between=lambda: None):
    """`analyze --every 20s` as a child until `runs` runs after the first: (first run's s from the
    process start, each warm run's own figure, the process tree's usage at each run's end, the last
    run's log lines, each warm run's Spark jobs)."""
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", "monitor", "analyze", "--every", "20s"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    first_s, warm, usage, lines, last_run, jobs = None, [], [], [], [], []
    try:
        for line in child.stderr:
            if "run failed" in line:
                raise SystemExit(f"analyze: {line.strip()}")
            lines.append(line.rstrip())
            done = DONE.search(line)
            if not done:
                continue
            last_run, lines = lines, []  # where the last run's time went, step by step (its own log)
            usage.append(tree_usage(child.pid))
            if first_s is None:
                first_s = time.monotonic() - started
                print(f"first run, cold JVM (start -> done): {first_s:.1f} s (its own figure {done[1]} s)", flush=True)
                first_done()
            else:
                warm.append(float(done[1]))
                jobs.append(int(done[3]))
                print(f"  incremental run {len(warm)}: {done[1]} s, {done[3]} Spark jobs", flush=True)
            if len(warm) == runs:
                break
            between()
    finally:
        child.terminate()
        child.wait(60)
    if first_s is None or not warm:
        raise SystemExit("analyze ended before its runs (its log above says why)")
    return first_s, warm, usage, last_run, jobs


def beside_a_live_collector(work: Path, env: dict, runs: int):
    """A dev cluster, `sim mixed` and `collect --interval 2s` for LIVE_WARM_S, then `watch_analysis` beside them."""
    cluster = devcluster.start(work / "kafka")
    parts = []
    try:
        live_env = {**env, "LAGMON_BOOTSTRAP_SERVERS": cluster.bootstrap}
        py = [sys.executable, "-m", "monitor"]
        for cmd in ([*py, "sim", "mixed", "--bootstrap", cluster.bootstrap], [*py, "collect", "--interval", "2s"]):
            parts.append(
                subprocess.Popen(cmd, cwd=ROOT, env=live_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
        time.sleep(LIVE_WARM_S)
        if any(p.poll() is not None for p in parts):
            raise SystemExit("the workload or the collector ended before the analysis started")
        return watch_analysis(live_env, runs)
    finally:
        for p in parts:
            p.terminate()
        for p in parts:
            p.wait(60)
        devcluster.destroy(cluster.dir)


def print_report(what: str, limits, first_s: float, warm: list[float], jobs: list[int], usage, pandas_s: float) -> None:
    first_limit, warm_limit, worst_limit = limits
    warm_s, worst_s = statistics.median(warm), max(warm)
    print(f"\n{what}")
    print(f"  first run, cold JVM     {first_s:6.1f} s   target <= {first_limit:g} s  {_met(first_s, first_limit)}")
    print(
        f"  warm incremental        {warm_s:6.1f} s   target <= {warm_limit:g} s  {_met(warm_s, warm_limit)}"
        f"   (median of {len(warm)}; worst {worst_s:.1f} s"
        + (f", target <= {worst_limit:g} s {_met(worst_s, worst_limit)})" if worst_limit else ")")
    )
    print(f"  Spark jobs per warm run  {statistics.median(jobs):5g}     (each a fixed cost: planning, scheduling)")
    cycles = [b.cpu_s - a.cpu_s for a, b in itertools.pairwise(usage)]
    print(
        f"  CPU, process tree       {usage[0].cpu_s:6.1f} s up to the first run's end; "
        f"{statistics.median(cycles):.1f} s per 20 s cycle after it (median)"
    )
    print(f"  peak RSS                {usage[-1].peaks()}")
    print(
        f"  peer: pandas, whole store in one process   {pandas_s:.2f} s  "
        f"(Spark warm incremental / pandas = {warm_s / pandas_s:.0f}x)"
    )


def _met(value: float, limit: float) -> str:
    return "met" if value <= limit else "NOT met"


def pad_history(history: Path, days: int, batches: int = 288) -> int:
    """Add `days` days, each with `batches` batch folders linking the first batch's files.

    They end two days before the oldest day, out of every read's range, as a month-old day is: the
    copies hold today's rows, which a read reaching into them would count twice.
    """
    added = 0
    for dataset in (d for d in history.iterdir() if d.is_dir()):
        first_day = min(d for d in dataset.iterdir() if d.name.startswith("day="))
        source = min(first_day.iterdir())
        oldest = datetime.date.fromisoformat(first_day.name[4:])
        for d in range(2, days + 2):
            day = dataset / f"day={oldest - datetime.timedelta(days=d)}"
            for b in range(1, batches + 1):
                target = day / f"batch={b}"
                target.mkdir(parents=True)
                for f in source.iterdir():
                    os.link(f, target / f.name)
                added += 1
    return added


def timed(fn):
    started = time.perf_counter()
    return fn(), time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
