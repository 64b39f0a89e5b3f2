"""monitor/logs.py: UTC times with the date, levels, LAGMON_LOG_FORMAT=json as one object per line; the
collector's cycle line carries its figures as fields; commands' products stay on stdout."""

from __future__ import annotations

import io
import json
import logging
import os
import time

import pytest
from harness import LOG_LINE, error_line

from monitor.__main__ import main
from monitor.collector import CycleResult, log_cycle
from monitor.logs import configure_logging, format_utc, get_logger

CREATED = 1_795_600_000.25  # 2026-11-25T...Z


@pytest.fixture
def logs():
    """Configure logging into a buffer; put the test runner's own setup back afterwards."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("lagmon").level
    buffer = io.StringIO()

    def configure(fmt: str = "text", level: str = "info") -> io.StringIO:
        configure_logging(fmt, level, stream=buffer)
        return buffer

    yield configure
    root.handlers[:], root.level = saved[0], saved[1]
    logging.getLogger("lagmon").setLevel(saved[2])


def record(message: str, level: int = logging.INFO, **fields) -> logging.LogRecord:
    rec = logging.LogRecord("lagmon.collector", level, __file__, 1, message, None, None)
    rec.created = CREATED
    rec.__dict__.update(fields)
    return rec


def test_times_are_utc_with_the_date_and_z_whatever_the_local_zone(monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert format_utc(CREATED) == "2026-11-25T09:46:40.250Z"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_text_lines_have_time_level_part_and_message(logs):
    out = logs("text")
    get_logger("collector").warning("cycle took %.2fs", 12.5)
    logging.getLogger("somelib").info("not shown: other libraries log warnings and errors only")
    logging.getLogger("somelib").warning("shown")
    lines = out.getvalue().splitlines()
    assert [LOG_LINE.match(line).groups() for line in lines] == [
        ("WARNING", "collector", "cycle took 12.50s"),
        ("WARNING", "somelib", "shown"),
    ]


def test_json_is_one_object_per_line_with_the_fields_of_the_record(logs):
    out = logs("json")
    log = get_logger("collector")
    log.info("3 groups", extra={"groups": 3, "cycle_seconds": 0.25})
    try:
        raise RuntimeError("boom\non two lines")
    except RuntimeError:
        log.exception("failed")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first.pop("time").endswith("Z")
    assert first == {
        "level": "INFO",
        "logger": "lagmon.collector",
        "message": "3 groups",
        "groups": 3,
        "cycle_seconds": 0.25,
    }
    assert second["level"] == "ERROR" and "RuntimeError: boom\non two lines" in second["exception"]


def test_the_level_setting_hides_lagmon_info(logs):
    out = logs("text", "warning")
    get_logger("collector").info("hidden")
    get_logger("collector").error("shown")
    assert [LOG_LINE.match(line).group(3) for line in out.getvalue().splitlines()] == ["shown"]


def test_a_collector_cycle_carries_its_figures(logs):
    out = logs("json")
    log_cycle(CycleResult(int(CREATED * 1000), True, 1250, 12, 340, sampling_ms=400, offsets_from_tail=True))
    log_cycle(
        CycleResult(int(CREATED * 1000), False, 3000, errors=("cannot sample Kafka at b:9092",), sampling_ms=3000)
    )
    ok, failed = (json.loads(line) for line in out.getvalue().splitlines())
    assert ok["message"] == "12 groups, 340 partitions in 1.25s (sampling 0.40s) (offsets from the tail)"
    assert {k: ok[k] for k in ("level", "cycle_seconds", "sampling_seconds", "groups", "partitions")} == {
        "level": "INFO",
        "cycle_seconds": 1.25,
        "sampling_seconds": 0.4,
        "groups": 12,
        "partitions": 340,
    }
    assert ok["sample_time"] == "2026-11-25T09:46:40.250Z" and ok["offsets_from_tail"] is True
    assert failed["level"] == "ERROR" and failed["ok"] is False
    assert failed["message"] == "sample failed: cannot sample Kafka at b:9092"


def test_a_malformed_log_format_is_one_error_line_naming_the_variable(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("LAGMON_LOG_FORMAT", "xml")
    monkeypatch.setenv("LAGMON_DATABASE_URL", f"sqlite:///{tmp_path / 'never.db'}")
    try:
        assert main(["groups"]) == 2
        assert error_line(capsys.readouterr().err) == "LAGMON_LOG_FORMAT: 'xml' is not one of text, json"
    finally:
        configure_logging()
    assert not (tmp_path / "never.db").exists()


def test_errors_of_commands_are_json_too_and_their_product_stays_on_stdout(monkeypatch, capsys, tmp_path):
    from monitor.store import upgrade

    db = tmp_path / "s.db"
    upgrade(f"sqlite:///{db}")
    monkeypatch.setenv("LAGMON_DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("LAGMON_LOG_FORMAT", "json")
    try:
        assert main(["groups", "--json"]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out) == [] and err == ""
        assert main(["lag", "nope"]) == 2
        out, err = capsys.readouterr()
        [line] = err.splitlines()
        assert out == "" and json.loads(line)["level"] == "ERROR" and "run collect first" in json.loads(line)["message"]
    finally:
        os.environ.pop("LAGMON_LOG_FORMAT", None)
        configure_logging()
