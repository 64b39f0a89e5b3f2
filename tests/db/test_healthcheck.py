"""`python -m monitor healthcheck` judges the newest cycle against the interval and shard the collector runs
with: its own options, else the `collect` role's arguments the image's entrypoint recorded (--role-file),
else LAGMON_POLL_INTERVAL and LAGMON_SHARD. A cycle 100 s old is stale for a 10 s collector (limit 60 s)
and fresh for a 60 s one (limit 180 s)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from factories import make_group, make_snapshot, owned_groups
from harness import error_line

from monitor.__main__ import main
from monitor.shard import UNSHARDED, KafkaShard, Shard
from monitor.store import Store, make_engine, upgrade

AGE_S = 100
SHARD = Shard(2, 3)


@pytest.fixture
def store_url(tmp_path, monkeypatch) -> str:
    """A store whose newest cycles, unsharded and by shard 2/3 of cluster `default`, are AGE_S old."""
    url = f"sqlite:///{tmp_path / 'lagmon.db'}"
    engine = make_engine(url)
    upgrade(engine)
    at = int((time.time() - AGE_S) * 1000)
    for shard in (UNSHARDED, SHARD):
        gid = owned_groups(shard, 1, "app")[0]
        Store(engine, shard).write_snapshot(make_snapshot(at, cluster="default", groups=[make_group(gid)]))
    engine.dispose()
    for name in ("LAGMON_POLL_INTERVAL", "LAGMON_SHARD", "LAGMON_CLUSTER_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAGMON_DATABASE_URL", url)
    return url


def healthcheck(capsys, *argv: str) -> tuple[int, str]:
    code = main(["healthcheck", *argv])
    out = capsys.readouterr()
    return code, (out.out + out.err).strip()


def role_file(tmp_path, *argv: str):
    """As docker/entrypoint.sh writes it: the role and each argument, each ending in a NUL byte."""
    path = tmp_path / "lagmon-role"
    path.write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    return str(path)


def test_the_settings_alone_judge_by_lagmon_poll_interval(store_url, capsys, monkeypatch):
    code, line = healthcheck(capsys)
    age = re.match(r"unhealthy: the newest sample is (\d+)s old \(more than 60s\)", line)
    assert code == 1 and age is not None, line
    assert AGE_S <= int(age.group(1)) <= AGE_S + 5  # the store was written a moment (on a busy machine, more) ago
    monkeypatch.setenv("LAGMON_POLL_INTERVAL", "1m")
    code, line = healthcheck(capsys)
    assert code == 0 and line.startswith("ok: newest sample") and "limit 180s: 3 intervals of 60s" in line


def test_the_interval_option_is_the_collectors(store_url, capsys):
    assert healthcheck(capsys, "--interval", "60s")[0] == 0
    assert healthcheck(capsys, "--interval", "20s")[0] == 1  # limit 60s


def test_the_role_file_gives_the_collect_roles_interval_and_shard(store_url, capsys, tmp_path):
    path = role_file(tmp_path, "collect", "--metrics-port", "9308", "--interval=60s", "--shard", "2/3")
    code, line = healthcheck(capsys, "--role-file", path)
    assert code == 0 and "3 intervals of 60s" in line
    # the same role with 10 s: stale; and a shard that never sampled: unhealthy, named
    assert healthcheck(capsys, "--role-file", role_file(tmp_path, "collect", "--shard", "2/3"))[0] == 1
    code, line = healthcheck(capsys, "--role-file", role_file(tmp_path, "collect", "--int", "1m", "--shard", "1/3"))
    assert (code, line) == (1, "unhealthy: no sample of cluster 'default' by shard 1/3 yet")


def test_the_healthchecks_own_options_win_over_the_role_file(store_url, capsys, tmp_path):
    path = role_file(tmp_path, "collect", "--interval", "60s")
    assert healthcheck(capsys, "--role-file", path)[0] == 0
    assert healthcheck(capsys, "--role-file", path, "--interval", "10s")[0] == 1


def test_a_missing_role_file_is_the_settings(store_url, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("LAGMON_POLL_INTERVAL", "60s")
    assert healthcheck(capsys, "--role-file", str(tmp_path / "none"))[0] == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (("collect", "--interval", "soon"), "--interval in {path}: 'soon' is not a duration"),
        (("collect", "--shard", "4/3"), "--shard in {path}: '4/3' is not a shard"),
        (("dashboard", "--server.port", "8600"), "--role-file: {path} records the role 'dashboard', not"),
    ],
)
def test_a_bad_role_file_is_one_error_line(store_url, capsys, tmp_path, argv, message):
    path = role_file(tmp_path, *argv)
    code = main(["healthcheck", "--role-file", path])
    out = capsys.readouterr()
    assert code == 2 and out.out == "" and error_line(out.err).startswith(message.format(path=path))


ROOT = Path(__file__).resolve().parents[2]


def script(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """One of the image's scripts as the image runs it: this checkout's code, the venv's python first."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAGMON_")}
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    return subprocess.run(
        list(argv), cwd=ROOT, env={**clean, "PATH": path, **env}, capture_output=True, text=True, timeout=60
    )


def test_the_image_health_check_honours_the_options_the_collect_role_was_given(store_url, tmp_path):
    """The entrypoint records `collect --interval 60s --shard 2/3` (here with --help, so nothing starts) and
    docker/healthcheck.sh, run apart as Docker runs it, judges shard 2/3 by 60 s: healthy, where the
    settings' 10 s alone would not be."""
    env = {"LAGMON_DATABASE_URL": store_url, "LAGMON_ROLE_FILE": str(tmp_path / "role")}
    assert script("docker/healthcheck.sh", env=env).returncode == 1  # no record yet: LAGMON_POLL_INTERVAL's 10s
    started = script("docker/entrypoint.sh", "collect", "--interval", "60s", "--shard", "2/3", "--help", env=env)
    assert started.returncode == 0 and "--interval" in started.stdout, started.stderr
    assert (tmp_path / "role").read_bytes() == b"collect\0--interval\x0060s\0--shard\x002/3\0--help\0"
    checked = script("docker/healthcheck.sh", env=env)
    assert checked.returncode == 0 and "3 intervals of 60s" in checked.stdout, checked.stdout + checked.stderr
    script("docker/entrypoint.sh", "collect", "--shard", "1/3", "--help", env=env)
    checked = script("docker/healthcheck.sh", env=env)
    assert checked.returncode == 1
    assert checked.stdout.strip() == "unhealthy: no sample of cluster 'default' by shard 1/3 yet"


def test_an_unwritable_role_file_is_a_warning_and_the_role_still_starts(store_url, tmp_path):
    env = {"LAGMON_DATABASE_URL": store_url, "LAGMON_ROLE_FILE": str(tmp_path / "no" / "such" / "dir")}
    started = script("docker/entrypoint.sh", "collect", "--help", env=env)
    assert started.returncode == 0 and started.stderr.startswith("warning: cannot write"), started.stderr


def test_the_dashboard_health_check_asks_the_port_the_role_was_given(httpserver, tmp_path):
    httpserver.expect_request("/_stcore/health").respond_with_data("ok")
    path = tmp_path / "role"
    path.write_bytes(b"dashboard\0--server.port\0" + str(httpserver.port).encode() + b"\0")
    env = {"LAGMON_ROLE_FILE": str(path), "LAGMON_DASHBOARD_PORT": "1"}  # the entrypoint's default: overridden
    assert script("docker/healthcheck.sh", env=env).returncode == 0
    path.write_bytes(b"dashboard\0")
    assert script("docker/healthcheck.sh", env=env).returncode != 0  # port 1: nothing answers
    path.write_bytes(f"dashboard\0--server.port={httpserver.port}\0".encode())
    assert script("docker/healthcheck.sh", env=env).returncode == 0


def test_a_coordinated_collector_is_judged_by_its_own_cycles_on_this_host(store_url, capsys, monkeypatch):
    """With --shard kafka every collector stores under shard "kafka": the check reads the newest cycle of
    the collectors named after this host (as a container's collector is), not another host's."""
    monkeypatch.setenv("LAGMON_POLL_INTERVAL", "60s")
    assert healthcheck(capsys, "--shard", "kafka") == (
        1,
        f"unhealthy: no sample of cluster 'default' by a collector on {socket.gethostname()} yet",
    )
    engine = make_engine(store_url)
    now = int(time.time() * 1000)
    for name, at in ((f"other-host-{os.getpid()}", now), (f"{socket.gethostname()}-{os.getpid()}", now - 400_000)):
        shard = KafkaShard(name)
        shard.hold(set(range(12)), 12, now_ms=0)
        Store(engine, shard).write_snapshot(make_snapshot(at, cluster="default", groups=[make_group("app-1")]))
    code, line = healthcheck(capsys, "--shard", "kafka")
    assert code == 1 and line.startswith("unhealthy: the newest sample is 40"), line  # this host's, not the other's
    Store(engine, KafkaShard(f"{socket.gethostname()}-1")).write_snapshot(make_snapshot(now, cluster="default"))
    assert healthcheck(capsys, "--shard", "kafka")[0] == 0
