"""Which lagmon this is: the installed package's version, or the checkout's pyproject.toml."""

from __future__ import annotations

import platform
import tomllib
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "lagmon"
UNKNOWN = "0+unknown"


def lagmon_version() -> str:
    """The version in the package metadata (pip install, or setup's editable install); from a
    checkout that was never installed, pyproject.toml's, marked `+checkout`."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text())["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return UNKNOWN
    return f"{project['version']}+checkout" if project.get("name") == DISTRIBUTION else UNKNOWN


def describe_version() -> str:
    """`lagmon --version`: `lagmon 0.1.0 (Python 3.11.2)`."""
    return f"lagmon {lagmon_version()} (Python {platform.python_version()})"


def build_labels() -> dict[str, str]:
    """The labels of the `lagmon_build_info` metric."""
    return {"version": lagmon_version(), "python": platform.python_version()}
