"""Collector shards: the owner of a group is a pure, stable function; --shard / LAGMON_SHARD parse strictly."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest
from harness import error_line

from monitor.__main__ import main
from monitor.config import load_settings
from monitor.models import ConfigError
from monitor.names import stored_name
from monitor.output import compute_ranges
from monitor.shard import (
    COORDINATED,
    UNSHARDED,
    KafkaShard,
    Shard,
    compute_other_layouts,
    compute_shard_index,
    coordinator_partition,
    parse_shard,
)
from monitor.store.writer import compute_groups_to_close

GROUPS = [f"orders-consumer-{i}" for i in range(3000)] + ["", "ä-ünïcode-группа", "a" * 300]


def test_the_owner_is_crc32_of_the_utf8_group_id_mod_n_plus_one():
    assert compute_shard_index("payments", 3) == zlib.crc32(b"payments") % 3 + 1
    assert compute_shard_index("ä", 4) == zlib.crc32("ä".encode()) % 4 + 1


def test_the_owner_is_the_same_in_another_process():
    """Python's hash() is salted per process; crc32 is not, so every shard agrees on every owner."""
    code = (
        "from monitor.shard import compute_shard_index as f; "
        "print([f(g, 7) for g in ('orders', 'payments', 'ä-ünïcode-группа', 'x' * 99)])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345"},
        cwd=Path(__file__).resolve().parents[2],
    ).stdout
    assert out.strip() == str([compute_shard_index(g, 7) for g in ("orders", "payments", "ä-ünïcode-группа", "x" * 99)])


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_every_group_has_exactly_one_owner(n):
    shards = [Shard(i, n) for i in range(1, n + 1)]
    owners = {g: [s.label for s in shards if s.owns(g)] for g in GROUPS}
    assert {g: len(o) for g, o in owners.items() if len(o) != 1} == {}


@pytest.mark.parametrize("n", [2, 3, 4])
def test_groups_spread_roughly_evenly(n):
    counts = Counter(compute_shard_index(g, n) for g in GROUPS)
    assert sorted(counts) == list(range(1, n + 1))
    expected = len(GROUPS) / n
    assert all(abs(c - expected) < 0.1 * expected for c in counts.values()), counts


def test_unsharded_owns_everything():
    assert Shard(1, 1) == UNSHARDED and UNSHARDED.label == "1/1" and not UNSHARDED.sharded
    assert all(UNSHARDED.owns(g) for g in GROUPS)


@pytest.mark.parametrize(
    "text, shard",
    [
        ("1/1", Shard(1, 1)),
        ("2/3", Shard(2, 3)),
        (" 3 / 3 ", Shard(3, 3)),
        ("", UNSHARDED),
        (None, UNSHARDED),
        ("kafka", COORDINATED),
        (" Kafka ", COORDINATED),
    ],
)
def test_parse_accepts_i_of_n(text, shard):
    assert parse_shard(text) == shard


@pytest.mark.parametrize("text", ["0/3", "4/3", "x", "1/0", "0/0", "-1/2", "2", "1/2/3", "1.5/2", "a/b"])
def test_parse_rejects_anything_else_with_one_clear_message(text):
    with pytest.raises(ConfigError) as e:
        parse_shard(text, "--shard")
    assert str(e.value) == f"--shard: {text!r} is not a shard; use i/n with 1 <= i <= n, e.g. 2/3, or kafka"


def test_the_setting_comes_from_lagmon_shard():
    assert load_settings({}).collector.shard == UNSHARDED
    assert load_settings({"LAGMON_SHARD": "2/4"}).collector.shard == Shard(2, 4)
    with pytest.raises(ConfigError, match=r"^LAGMON_SHARD: '4/3' is not a shard"):
        load_settings({"LAGMON_SHARD": "4/3"})


@pytest.mark.parametrize("argv", [["collect", "--once", "--shard", "0/3"], ["healthcheck", "--shard", "x"]])
def test_a_bad_shard_option_is_one_error_line_before_anything_starts(argv, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("LAGMON_DATABASE_URL", f"sqlite:///{tmp_path / 'never.db'}")
    monkeypatch.setenv("LAGMON_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    assert main(argv) == 2
    assert error_line(capsys.readouterr().err).startswith(f"--shard: {argv[-1]!r} is not a shard")
    assert not (tmp_path / "never.db").exists()


def test_a_shard_closes_only_its_own_vanished_groups():
    shard = Shard(1, 2)
    mine = [g for g in GROUPS[:40] if shard.owns(g)][:3]
    theirs = [g for g in GROUPS[:40] if not shard.owns(g)][:3]
    open_groups = mine + theirs
    # the cycle saw mine[0] only: mine[1:] are gone; the other shard's groups are never this shard's to close
    assert compute_groups_to_close(open_groups, [mine[0]], shard.owns) == sorted(mine[1:])
    assert compute_groups_to_close(open_groups, [mine[0]], UNSHARDED.owns) == sorted(mine[1:] + theirs)


def test_collectors_with_another_shard_count_are_named():
    assert compute_other_layouts(Shard(2, 3), ["1/3", "2/3", "1/1", "2/2", "3/3"]) == ["1/1", "2/2"]
    assert compute_other_layouts(UNSHARDED, ["1/1"]) == []
    assert compute_other_layouts(Shard(1, 2), ["1/2", "kafka"]) == ["kafka"]
    assert compute_other_layouts(KafkaShard("a"), ["kafka", "1/1", "2/3"]) == ["1/1", "2/3"]


def test_a_coordinated_collector_owns_the_groups_of_the_partitions_it_holds():
    shard = KafkaShard("a")
    assert not any(shard.owns(g) for g in GROUPS) and not shard.leads and COORDINATED.label == shard.label == "kafka"
    shard.hold({0, 3}, 12, now_ms=1000)
    assert [g for g in GROUPS if shard.owns(g)] == [g for g in GROUPS if coordinator_partition(g, 12) in (0, 3)]
    assert shard.leads and shard.since == {0: 1000, 3: 1000}
    version = shard.version
    assert shard.release({0}, wait_s=0) and shard.version > version and not shard.leads
    assert [g for g in GROUPS if shard.owns(g)] == [g for g in GROUPS if coordinator_partition(g, 12) == 3]
    assert shard.owns_alert("", "collector a") and not shard.owns_alert("", "shard 1/2")


def test_a_stand_in_is_placed_by_the_id_it_stands_for():
    shard, real = KafkaShard("a"), "x" * 300
    shard.hold({coordinator_partition(real, 12)}, 12, now_ms=0)
    assert shard.owns(stored_name(real)) and shard.owns(real)


def test_a_release_waits_for_the_work_begun_before_it():
    """The old owner's cycle or tail batch in progress ends, with the partitions it began with, before they
    go to another collector."""
    shard, events = KafkaShard("a"), []
    shard.hold({1, 2}, 12, now_ms=0)
    began, go_on = threading.Event(), threading.Event()

    def cycle():
        with shard.working():
            began.set()
            go_on.wait(5)
            events.append(("cycle ended holding", sorted(shard.held)))  # as it began: one owner per cycle

    worker = threading.Thread(target=cycle)
    worker.start()
    began.wait(5)
    assert not shard.release({2}, wait_s=0.2)  # still working: not within 0.2 s
    releaser = threading.Thread(target=lambda: events.append(("released", shard.release({1}, wait_s=5))))
    releaser.start()
    time.sleep(0.2)
    go_on.set()
    worker.join(5)
    releaser.join(5)
    assert events == [("cycle ended holding", [1, 2]), ("released", True)]
    assert shard.held == frozenset()


@pytest.mark.parametrize(
    "numbers, text", [(set(), ""), ({3}, "3"), ({0, 1, 2, 5}, "0-2, 5"), ({9, 7, 8, 1, 11}, "1, 7-9, 11")]
)
def test_partition_numbers_read_as_ranges(numbers, text):
    assert compute_ranges(numbers) == text
