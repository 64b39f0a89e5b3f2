"""CPU seconds and peak resident memory of a process, or of it and its descendants, read from /proc (Linux)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import psutil

CLK_TCK = os.sysconf("SC_CLK_TCK")
KB_PER_MB = 1024.0


def _stat_cpu_s(stat: str) -> float:
    """utime + stime (fields 14 and 15) of a /proc stat line, in seconds; the name before them may hold spaces."""
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class ProcessMeter:
    """What /proc says about one process: CPU seconds, peak RSS, and whether its main thread sleeps."""

    def __init__(self, pid: int):
        self.pid = pid

    def cpu_s(self) -> float:
        """utime + stime of every thread so far."""
        return _stat_cpu_s(Path(f"/proc/{self.pid}/stat").read_text())

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / KB_PER_MB
        raise RuntimeError(f"no VmHWM for pid {self.pid}")

    def thread_cpu_s(self) -> dict[int, tuple[str, float]]:
        """{thread id: (its name as the kernel knows it, utime + stime so far)}; librdkafka names its own
        threads (rdk:main, rdk:broker1, ...), Python's all show as the interpreter."""
        out = {}
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                stat = task.joinpath("stat").read_text()
                out[int(task.name)] = (stat.partition(" (")[2].rpartition(")")[0], _stat_cpu_s(stat))
        return out

    def main_thread(self) -> tuple[bool, int]:
        """(sleeping, nanoseconds on a CPU) of the main thread, where the collector's cycles run."""
        task = Path(f"/proc/{self.pid}/task/{self.pid}")
        state = task.joinpath("stat").read_text().rpartition(")")[2].split()[0]
        return state == "S", int(task.joinpath("schedstat").read_text().split()[0])


@dataclass(frozen=True)
class TreeUsage:
    cpu_s: float  # user + system seconds of the live processes of the tree so far
    peak_mib: dict[str, float]  # per process, "name pid": its own peak RSS (VmHWM)

    def peaks(self) -> str:
        return ", ".join(f"{name} {mib:,.0f} MiB" for name, mib in self.peak_mib.items())


def tree_usage(pid: int) -> TreeUsage:
    """The tree as it is now: a process that already exited is not counted (the analysis' are long-lived)."""
    cpu, peaks = 0.0, {}
    root = psutil.Process(pid)
    for proc in [root, *root.children(recursive=True)]:
        meter = ProcessMeter(proc.pid)
        with contextlib.suppress(psutil.NoSuchProcess, OSError, RuntimeError):  # it exited meanwhile
            cpu, peaks[f"{proc.name()} {proc.pid}"] = cpu + meter.cpu_s(), meter.peak_rss_mb()
    return TreeUsage(cpu, peaks)
