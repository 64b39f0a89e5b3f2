"""Rebalance recall of polling at 1 s and at 10 s, in the same run, against the consumers' own truth.

For each scenario, two collectors (1 s and 10 s) watch the same real workload;
each real rebalance (from the consumers' callbacks in the truth file) counts as
found when one recorded row covers it (one-to-one: merged rebalances count once).
Run:  .venv/bin/python bench/bench_rebalance_recall.py [--duration 60]
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path

from scenario_watch import watch_scenario

from monitor import devcluster

SCENARIOS = ["churn", "cooperative", "kip848", "crash", "static"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--scenarios", nargs="*", default=SCENARIOS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lagmon-recall-") as tmp:
        cluster = devcluster.start(Path(tmp) / "kafka")
        try:
            print(
                f"{'scenario':<12} {'real':>5} {'found@1s':>9} {'recall@1s':>10} {'found@10s':>10} "
                f"{'recall@10s':>11} {'invented@1s/10s':>16}"
            )
            for scenario in args.scenarios:
                recall, _, _ = watch_scenario(
                    cluster.bootstrap, scenario, Path(tmp), uuid.uuid4().hex[:8], args.duration, intervals=(1.0, 10.0)
                )
                fast, slow = recall[1.0], recall[10.0]
                print(
                    f"{scenario:<12} {fast.rounds:>5} {fast.matched:>9} {fast.recall:>10.0%} {slow.matched:>10} "
                    f"{slow.recall:>11.0%} {fast.invented:>8}/{slow.invented}",
                    flush=True,
                )
        finally:
            devcluster.destroy(cluster.dir)


if __name__ == "__main__":
    main()
