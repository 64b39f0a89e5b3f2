"""Rendering for the CLI: aligned tables for people, JSON for scripts. Times are shown in UTC."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from monitor.names import visible


def fmt_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def fmt_duration(ms: int | None) -> str:
    if ms is None:
        return "-"
    seconds = ms / 1000
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}m"


def render_table(rows: list[dict], empty: str) -> str:
    """Columns in the order of the first row's keys; None shows as '-'; `empty` explains no rows."""
    if not rows:
        return empty
    columns = list(rows[0])
    cells = [[("-" if row[c] is None else visible(str(row[c]))) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def render_json(rows: list[dict]) -> str:
    return json.dumps(rows, indent=None, default=str)


def compute_ranges(numbers) -> str:
    """{0, 1, 2, 5} -> "0-2, 5" (partition numbers in a line of text)."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
