"""Every LAGMON_* setting the code reads is in the configuration reference."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["monitor", "spark", "app_pages", "docker", "app.py", "Dockerfile"]


def settings_in_code() -> set[str]:
    files = [
        p
        for s in SOURCES
        for p in ([ROOT / s] if (ROOT / s).is_file() else (ROOT / s).rglob("*"))
        if p.is_file() and p.suffix in ("", ".py", ".sh", ".toml", ".yaml")
    ]
    found = {m for f in files for m in re.findall(r"\bLAGMON_[A-Z0-9_]+", f.read_text(errors="replace"))}
    return {documented_as(name) for name in found}


def documented_as(name: str) -> str:
    """LAGMON_KAFKA_ + a librdkafka setting is one family, documented as LAGMON_KAFKA_*."""
    if name.startswith("LAGMON_KAFKA_") and name not in ("LAGMON_KAFKA_CONFIG", "LAGMON_KAFKA_LIBS"):
        return "LAGMON_KAFKA_*"
    return name


def test_every_setting_is_documented_with_a_default_and_a_meaning():
    reference = (ROOT / "docs" / "configuration.md").read_text()
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r"^\| `(LAGMON_[A-Z0-9_*]+)` \|[^|]*\|[^|]*\S[^|]*\|$", reference, re.M)
    }
    code = settings_in_code()
    assert code, "found no settings: the scan is broken"
    assert sorted(code - set(rows)) == []  # read by the code, missing from the page
    assert sorted(set(rows) - code) == []  # on the page, read by nothing
