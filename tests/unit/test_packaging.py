"""pyproject.toml against requirements.txt, and the `lagmon` command's version.

pyproject.toml declares what lagmon needs, as ranges (the source of truth); requirements.txt pins one
tested set that setup, CI and the image install. Every pin must fall inside its declared range, and
every declared requirement must be pinned. (tests/e2e/test_install.py builds and installs the wheel.)
"""

from __future__ import annotations

import platform
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from monitor import version
from monitor.__main__ import main, program_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def pins() -> dict[str, Requirement]:
    found = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            found[canonicalize_name(requirement.name)] = requirement
    return found


def declared() -> list[Requirement]:
    extras = [r for group in PROJECT["optional-dependencies"].values() for r in group]
    return [Requirement(r) for r in [*PROJECT["dependencies"], *extras]]


def test_every_pin_is_exact_and_inside_the_declared_range():
    pinned = pins()
    for requirement in declared():
        pin = pinned.get(canonicalize_name(requirement.name))
        assert pin is not None, f"{requirement.name} is declared in pyproject.toml but not pinned in requirements.txt"
        [spec] = pin.specifier
        assert spec.operator == "==", pin
        assert requirement.specifier.contains(spec.version), (
            f"requirements.txt {pin} is outside pyproject's {requirement}"
        )
        assert pin.extras == requirement.extras, pin


def test_every_pin_is_declared():
    names = {canonicalize_name(r.name) for r in declared()}
    assert set(pins()) - names == set()  # what only the tests need is in requirements-test.txt


def test_the_console_script_is_the_command_line_of_python_m_monitor():
    assert PROJECT["scripts"] == {"lagmon": "monitor.__main__:main"}
    assert program_name("/usr/local/bin/lagmon") == "lagmon"
    assert program_name("/src/monitor/__main__.py") == "python -m monitor"


def test_version_names_lagmon_and_python(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"lagmon {version.lagmon_version()} (Python {platform.python_version()})\n"


def test_version_comes_from_the_metadata_else_from_the_checkout(monkeypatch):
    monkeypatch.setattr(version.metadata, "version", lambda name: "9.8.7")
    assert version.lagmon_version() == "9.8.7"

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(version.metadata, "version", not_installed)
    assert version.lagmon_version() == f"{PROJECT['version']}+checkout"
