"""`pip install .` gives a working `lagmon`: the wheel, installed into a new virtual environment, run from
a folder outside the checkout.

The wheel is built from a copy of the sources (nothing is written into the checkout) and installed with
--no-deps into a venv made by `python -m venv` (no system site-packages); that venv reaches the project's
installed dependencies through a .pth file naming this venv's site-packages, so nothing is downloaded.
(.pth files inside that folder are not read, so the checkout's editable install stays out of it.) Then,
from a temporary folder: `lagmon --version`, `lagmon db upgrade` on a new SQLite file, a collector cycle
against the session's real broker, `lagmon groups --json`, the dashboard's script run from site-packages,
and `lagmon dashboard` answering /_stcore/health.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import sysconfig
import tomllib
import urllib.request
from pathlib import Path

import pytest
from harness import wait_for
from kafka_setup import commit_without_joining, create_topic

from monitor.demo import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "app.py", "app_pages", "migrations", "monitor", "spark")


def run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}: {done.stdout}{done.stderr}"
    return done


def build_wheel(tmp: Path) -> Path:
    """lagmon's wheel from a copy of the sources; offline when this venv's setuptools can build wheels
    (requirements-test.txt pins one that can), else with pip's build isolation as `make setup` does."""
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    can_build = subprocess.run([sys.executable, "-c", "import setuptools.command.bdist_wheel"], capture_output=True)
    isolation = [] if can_build.returncode else ["--no-build-isolation", "--no-index"]
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", tmp / "dist", src])
    [wheel] = (tmp / "dist").glob("lagmon-*.whl")
    return wheel


def make_venv(tmp: Path, wheel: Path) -> Path:
    """A new venv with the wheel alone installed, then given this venv's packages through a .pth."""
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel])
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(site, "project-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def test_the_installed_wheel_runs_the_collector_cli_and_dashboard_outside_the_checkout(kafka, unique, tmp_path):
    topic, group = f"installed-{unique}", f"installed-app-{unique}"
    create_topic(kafka.bootstrap, topic, 1)
    commit_without_joining(kafka.bootstrap, group, {(topic, 0): 0})
    venv = make_venv(tmp_path, build_wheel(tmp_path))
    lagmon, python = venv / "bin" / "lagmon", venv / "bin" / "python"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LAGMON_DATABASE_URL": f"sqlite:///{elsewhere / 'installed.db'}",
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_GROUP_ALLOW": f"^{group}$",
    }
    here = {"cwd": elsewhere, "env": env}

    # the code that runs is the wheel's, in the new venv, not the checkout's
    where = run(
        [python, "-c", "import importlib.util as u; print(*(u.find_spec(m).origin for m in ('monitor', 'app')))"],
        **here,
    )
    assert all(Path(p).is_relative_to(venv) for p in where.stdout.split()), where.stdout
    version = run([lagmon, "--version"], **here).stdout.strip()
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version.startswith(f"lagmon {declared} (Python "), version

    run([lagmon, "db", "upgrade"], **here)  # the migrations, from site-packages
    assert run([lagmon, "groups", "--json"], **here).stdout.strip() == "[]"
    run([lagmon, "collect", "--once"], **here)  # the default alert rules are package data
    [shown] = json.loads(run([lagmon, "groups", "--json"], **here).stdout)
    assert shown["GROUP"] == group

    # app.py and app_pages/ from site-packages, run by Streamlit's own test runner on that store
    page = run(
        [
            python,
            "-c",
            "from streamlit.testing.v1 import AppTest; from monitor.cli.dashboard import APP; "
            "at = AppTest.from_file(str(APP), default_timeout=60).run(); "
            "print(APP); print([e.value for e in at.exception])",
        ],
        **here,
    )
    app_path, exceptions = page.stdout.strip().splitlines()[-2:]
    assert Path(app_path).is_relative_to(venv) and exceptions == "[]", page.stdout + page.stderr

    port = free_port(0)
    log = tmp_path / "dashboard.log"
    with open(log, "w") as out:
        dashboard = subprocess.Popen(
            [lagmon, "dashboard", "--server.port", str(port)], stdout=out, stderr=subprocess.STDOUT, **here
        )
    try:
        wait_for(lambda: _ok(f"http://127.0.0.1:{port}/_stcore/health"), 30, "the installed dashboard to answer")
    finally:
        dashboard.send_signal(signal.SIGTERM)
        try:
            assert dashboard.wait(20) == 0, log.read_text()
        except subprocess.TimeoutExpired:
            dashboard.kill()
            dashboard.wait()
            raise
    assert "stopped" in log.read_text()
    assert not any(p.name == "installed.db" for p in ROOT.iterdir())  # nothing was written into the checkout


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False
