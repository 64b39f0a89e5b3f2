"""CPU seconds and peak resident memory of a process and its descendants, read from /proc (Linux)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psutil


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
        try:
            times = proc.cpu_times()
            cpu += times.user + times.system
            peaks[f"{proc.name()} {proc.pid}"] = _vm_hwm_kib(proc.pid) / 1024
        except (psutil.NoSuchProcess, FileNotFoundError):
            pass
    return TreeUsage(cpu, peaks)


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise FileNotFoundError(f"no VmHWM for pid {pid}")
