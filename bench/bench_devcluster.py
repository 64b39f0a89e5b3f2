"""How long until a fresh local Kafka answers metadata: 1 node and 3 nodes, median of 5.

Each run uses a new folder, so it includes `kafka-storage format` of every node.
The peer is the issue's target (15 s for 1 node, 30 s for 3). Run:
    .venv/bin/python bench/bench_devcluster.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from monitor import devcluster

TARGET_S = {1: 15.0, 3: 30.0}


def time_start(nodes: int) -> float:
    with tempfile.TemporaryDirectory(prefix="lagmon-bench-") as tmp:
        started = time.perf_counter()
        devcluster.start(Path(tmp) / "c", nodes=nodes)
        elapsed = time.perf_counter() - started
        devcluster.destroy(Path(tmp) / "c")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    for nodes in (1, 3):
        times = [time_start(nodes) for _ in range(runs)]
        median = statistics.median(times)
        print(
            f"{nodes}-node cluster ready: median {median:.1f} s, worst {max(times):.1f} s over {runs} runs "
            f"({', '.join(f'{t:.1f}' for t in times)}); target {TARGET_S[nodes]:.0f} s, "
            f"ratio target/median {TARGET_S[nodes] / median:.1f}x"
        )


if __name__ == "__main__":
    main()
