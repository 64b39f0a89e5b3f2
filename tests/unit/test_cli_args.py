"""Relative times after --since/--until read as values, as the README writes them."""

from monitor.__main__ import build_parser, join_relative_times


def test_a_relative_time_after_since_or_until_is_its_value():
    assert join_relative_times(["rebalances", "--since", "-1h", "--until", "-10m", "--json"]) == [
        "rebalances",
        "--since=-1h",
        "--until=-10m",
        "--json",
    ]
    args = build_parser().parse_args(join_relative_times(["events", "--since", "-5m"]))
    assert args.since == "-5m"


def test_other_arguments_are_left_alone():
    argv = ["rebalances", "--since", "2026-11-22T10:00Z", "--group", "-odd-group-name", "--json"]
    assert join_relative_times(argv) == argv
    assert join_relative_times(["lag", "--json", "-h"]) == ["lag", "--json", "-h"]


def test_collect_and_healthcheck_take_a_shard():
    assert build_parser().parse_args(["collect", "--shard", "2/3"]).shard == "2/3"
    assert build_parser().parse_args(["healthcheck", "--shard", "1/2"]).shard == "1/2"
    assert build_parser().parse_args(["collect"]).shard is None  # then LAGMON_SHARD, else all groups


def test_a_bug_in_a_command_is_one_critical_log_record_and_exit_1(monkeypatch, caplog):
    import monitor.__main__ as entry

    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(entry, "cmd_groups", broken)
    main = entry.main

    assert main(["groups"]) == 1
    (record,) = [r for r in caplog.records if r.levelname == "CRITICAL"]
    assert record.getMessage() == "unexpected error" and "RuntimeError: a bug" in caplog.text
