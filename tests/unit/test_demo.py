"""monitor.demo: the dashboard is one of the demo's parts, local-only, on a port that is free."""

from __future__ import annotations

import socket

from monitor.cli.dashboard import APP, compute_configured, read_configured, streamlit_command
from monitor.demo import demo_processes, free_port


def test_demo_starts_the_dashboard_on_loopback_with_the_given_port():
    cmd = demo_processes("127.0.0.1:9092", 8599)["dashboard"]
    assert cmd[1:4] == ["-m", "monitor", "dashboard"]
    flags = dict(zip(cmd[4::2], cmd[5::2], strict=True))
    assert flags == {
        "--server.address": "127.0.0.1",
        "--server.port": "8599",
        "--server.headless": "true",
        "--browser.gatherUsageStats": "false",
    }


def test_the_dashboard_command_runs_streamlit_on_app_py_local_and_headless_unless_told_otherwise():
    assert streamlit_command(["--server.port", "8599"])[1:] == [
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.showErrorDetails",
        "none",
        "--server.port",
        "8599",
    ]
    given = ["--server.address=0.0.0.0", "--server.headless", "false", "--browser.gatherUsageStats", "true"]
    given += ["--client.showErrorDetails", "full"]
    assert streamlit_command(given)[5:] == given  # the user's options, and none of lagmon's defaults
    assert APP.name == "app.py" and APP.exists()


def test_a_setting_in_a_config_file_or_the_environment_is_not_overridden(tmp_path, monkeypatch):
    """Streamlit's flags beat its config.toml: lagmon passes a default only where the user set nothing."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "config.toml").write_text('[server]\naddress = "0.0.0.0"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("STREAMLIT_BROWSER_GATHER_USAGE_STATS", "true")
    assert read_configured() == {"server.address", "browser.gatherUsageStats"}
    assert streamlit_command([], read_configured())[5:] == [
        "--server.headless",
        "true",
        "--client.showErrorDetails",
        "none",
    ]
    assert compute_configured([{"server": {"headless": False}}], {}) == {"server.headless"}


def test_free_port_prefers_the_given_one_and_falls_back_when_taken():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        other = free_port(busy)
        assert other != busy and other > 0
    assert free_port(busy) == busy


def test_the_demo_receiver_prints_what_apprise_sends(capsys):
    from monitor.alerts.notify import send_message
    from monitor.demo import start_alert_receiver

    receiver = start_alert_receiver()
    try:
        sent = send_message(
            f"json://127.0.0.1:{receiver.server_address[1]}/",
            "FIRING lag on orders",
            "orders: 1,200 offsets behind (42 s)",
        )
    finally:
        receiver.shutdown()
    printed = capsys.readouterr().out
    assert sent
    assert "demo: alert received" in printed
    assert "FIRING lag on orders\norders: 1,200 offsets behind (42 s)" in printed


def test_the_collector_in_the_demo_serves_metrics_and_alerts_to_the_receiver():
    from monitor.demo import demo_environment

    cmd = demo_processes("127.0.0.1:9092", 8599, 9399)["collector"]
    assert cmd[-2:] == ["--metrics-port", "9399"]
    env = demo_environment("127.0.0.1:9092", 4321, 8599)
    assert env["LAGMON_CHANNELS"] == "demo=json://127.0.0.1:4321/"
    assert env["LAGMON_DASHBOARD_URL"] == "http://127.0.0.1:8599/"
