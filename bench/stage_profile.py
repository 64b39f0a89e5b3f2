"""Where a running collector's CPU goes: per thread from /proc, per stage from py-spy's samples.

py-spy (requirements-test.txt) samples the worker's Python stacks from outside, without
stopping it; each sample of a thread that is not idle is put under the first stage whose
function is on its stack. /proc gives each thread's CPU seconds, and py-spy's header lines
("thread (TID): name") give the Python threads' names, which the kernel does not know.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from proc_usage import ProcessMeter

SAMPLES_PER_S = 100
RAW_THREADS = ("--threads", "--nonblocking", "--format", "raw", "-o", "/dev/stdout")  # every thread, never paused
# (function on the stack, stage) in the order they are looked for; a sample under none is "other"
STAGES = [
    ("KafkaSampler.fetch_snapshot", "sampling: Kafka's answers"),
    ("compute_changes", "events and rebalances"),
    ("HealthStage.judge", "health: judging every group"),
    ("StoreBacklog.write", "store: the cycle's rows"),
    ("AlertEngine.__call__", "alerts"),
    ("MetricsExporter", "exporter"),
    ("Roster", "collectors' roster"),
    ("GarbagePacer", "garbage collection pacing"),
    ("OffsetsTopicReader.fetch_batch", "tail: consume"),
    ("TailState.apply", "tail: decode and fold"),
    ("OffsetsTail._write", "tail: store"),
]
_THREAD = re.compile(r"^thread \((\d+)\)(?:: ([^;]*))?")


@dataclass
class Profile:
    """CPU-s per second of each thread, and the share of each Python thread's samples per stage."""

    threads: list[tuple[str, float]]  # (name, CPU-s per second), busiest first
    stages: dict[str, list[tuple[str, float]]]  # thread name -> [(stage, share of its samples)]


def py_spy() -> str | None:
    found = Path(sys.executable).with_name("py-spy")
    return str(found) if found.exists() else shutil.which("py-spy")


def compute_stage_shares(raw: str) -> tuple[dict[int, str], dict[str, list[tuple[str, float]]]]:
    """From py-spy's raw output (`--format raw --threads`: "thread (TID): name;frame;frame N" per line):
    ({thread id: name}, {thread name: [(stage, share of its samples)], largest first})."""
    names: dict[int, str] = {}
    counts: dict[str, Counter] = defaultdict(Counter)
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        match = _THREAD.match(stack)
        if not match or not n.isdigit():
            continue
        name = names[int(match.group(1))] = (match.group(2) or "").strip() or "unnamed"
        stage = next((label for marker, label in STAGES if marker in stack), "other")
        counts[name][stage] += int(n)
    shares = {name: [(stage, n / sum(c.values())) for stage, n in c.most_common()] for name, c in counts.items()}
    return names, shares


def profile_worker(meter: ProcessMeter, seconds: float) -> Profile | None:
    """Sample `meter`'s process for `seconds` (None without py-spy); its threads' CPU over the same span."""
    tool = py_spy()
    if tool is None:
        return None
    before = meter.thread_cpu_s()
    done = subprocess.run(
        [tool, "record", "-p", str(meter.pid), "-d", f"{seconds:g}", "-r", str(SAMPLES_PER_S), *RAW_THREADS],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
    )
    after = meter.thread_cpu_s()
    names, shares = compute_stage_shares(done.stdout)
    cpu: Counter = Counter()
    for tid, (kernel_name, cpu_s) in after.items():
        cpu[names.get(tid, kernel_name)] += (cpu_s - before.get(tid, (kernel_name, 0.0))[1]) / seconds
    return Profile([(name, s) for name, s in cpu.most_common() if s > 0], shares)
