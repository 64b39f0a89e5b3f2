"""The collector-only image target (`docker build --target collector`), checked without a Docker engine
(none runs here; the image itself is not built by these tests).

The Dockerfile: a `collector` stage with requirements-collector.txt alone, no Java, no spark/ or
dashboard, and the full image still the default (last) stage. The subset: requirements.txt's own
pins, without PySpark, Streamlit, pandas or pyarrow. And that it is enough: the collector's
commands run with every other installed module refused (tests/support/collector_only.py), a collector
cycle included (against no broker here; tests/integration/test_image.py runs one against a real
broker in a virtual environment holding the subset alone).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from harness import error_line
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
COLLECTOR_ONLY = ROOT / "tests" / "support" / "collector_only.py"
HEAVY = {"pyspark", "streamlit", "pandas", "pyarrow", "altair", "numpy", "authlib", "httpx"}
NOT_COPIED = {"spark", "app_pages", "app"}  # lagmon's own, left out of the collector image
ALWAYS = {"pip", "setuptools", "pkg_resources", "_distutils_hack"}  # in every venv python3.11 -m venv makes


def stages() -> dict[str, list[str]]:
    """{stage name: its instructions}, in the Dockerfile's order."""
    out: dict[str, list[str]] = {}
    name = ""
    for line in (ROOT / "Dockerfile").read_text().replace("\\\n", " ").splitlines():
        line = line.strip()
        if match := re.match(r"FROM \S+ AS (\S+)", line):
            name = match.group(1)
            out[name] = []
        elif name and line and not line.startswith("#"):
            out[name].append(line)
    return out


def pins(path: str) -> dict[str, str]:
    """{distribution: requirement} of a requirements file (comments and -r lines aside)."""
    lines = [line.split("#")[0].strip() for line in (ROOT / path).read_text().splitlines()]
    reqs = [Requirement(line) for line in lines if line and not line.startswith("-")]
    return {canonical(r.name): str(r) for r in reqs}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(requirements: list[Requirement]) -> set[str]:
    """The distributions `requirements` install here, dependencies and extras included."""
    seen: set[str] = set()
    todo = list(requirements)
    while todo:
        req = todo.pop()
        if canonical(req.name) in seen:
            continue
        seen.add(canonical(req.name))
        for text in metadata.distribution(req.name).requires or []:
            dep = Requirement(text)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in req.extras or {""}):
                todo.append(dep)
    return seen


def refused_modules() -> set[str]:
    """Every top-level module installed here that the collector image would not have."""
    wanted = closure([Requirement(r) for r in pins("requirements-collector.txt").values()])
    installed = metadata.packages_distributions()
    allowed = {m for m, dists in installed.items() if any(canonical(d) in wanted for d in dists)} | ALWAYS
    return (set(installed) - allowed - {"monitor"}) | NOT_COPIED


def test_the_collector_stage_installs_the_subset_alone_and_no_java():
    s = stages()
    assert list(s) == ["collector-deps", "python-deps", "collector", "full"]  # the full image is the default
    deps = " ".join(s["collector-deps"])
    assert "COPY requirements-collector.txt" in deps
    assert "install-python.sh /opt/lagmon requirements-collector.txt" in deps
    collector = " ".join(s["collector"])
    assert "COPY --from=collector-deps /opt/lagmon /opt/lagmon" in collector
    assert "openjdk" not in collector and "jdbc" not in collector
    copied = [i.split()[1:-1] for i in s["collector"] if i.startswith("COPY ") and "--from" not in i]
    assert sorted(src for srcs in copied for src in srcs) == [
        "alembic.ini",
        "docker/",
        "migrations/",
        "monitor/",
        "pyproject.toml",
    ]  # pyproject: the version
    assert any("HEALTHCHECK" in i for i in s["collector"]) and 'CMD ["collect"]' in s["collector"]
    full = " ".join(s["full"])
    assert "openjdk-17-jre-headless" in full and "COPY --from=python-deps" in full and "COPY spark/" in full


def test_the_subset_has_requirements_txts_pins_and_none_of_the_heavy_parts():
    subset, everything = pins("requirements-collector.txt"), pins("requirements.txt")
    assert {name: everything.get(name) for name in subset} == subset
    assert {"confluent-kafka", "sqlalchemy", "alembic"} <= set(subset)
    assert not HEAVY & closure([Requirement(r) for r in subset.values()])


def test_the_guard_refuses_what_the_image_lacks():
    refused = refused_modules()
    assert {"pyspark", "streamlit", "pandas", "pyarrow", "spark", "app_pages"} <= refused
    assert not {"confluent_kafka", "sqlalchemy", "alembic", "yaml", "apprise", "psycopg"} & refused


def collector_only(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAGMON_")}
    return subprocess.run(
        [sys.executable, str(COLLECTOR_ONLY), ",".join(sorted(refused_modules())), *argv],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    return {"LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'lagmon.db'}", "LAGMON_BOOTSTRAP_SERVERS": "127.0.0.1:1"}


def test_the_collectors_commands_run_without_spark_or_the_dashboard(env):
    assert collector_only("--help", env=env).returncode == 0
    upgraded = collector_only("db", "upgrade", env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    for argv, code, said in [
        (["healthcheck"], 1, "unhealthy: no sample of cluster 'default' yet"),
        (["groups"], 0, ""),
        (["alerts"], 0, ""),
        (["trends"], 0, "no trends yet"),
    ]:
        done = collector_only(*argv, env=env)
        assert (done.returncode, done.stderr) == (code, ""), (argv, done.stderr)
        assert said in done.stdout


def test_a_collector_cycle_runs_without_spark_or_the_dashboard(env):
    """No broker answers at 127.0.0.1:1: the cycle fails as a cycle (exit 1), having imported the whole
    collector (Kafka client, store, health, alerts) with the rest refused."""
    done = collector_only("collect", "--once", "--interval", "2s", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stdout + done.stderr
    assert "collector: cluster 'default'" in done.stderr  # the start-up log line


def test_analyze_says_it_needs_the_full_image(env):
    done = collector_only("analyze", env=env)
    assert (done.returncode, error_line(done.stderr)) == (
        2,
        "analyze needs PySpark and lagmon's spark/ (there is no pyspark here): run it from the full image, "
        "or where requirements.txt is installed",
    )
