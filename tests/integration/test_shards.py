"""Two collector shards (`collect --shard 1/2` and LAGMON_SHARD=2/2) against a real broker and one database.

Together they must store exactly what one unsharded collector stores, each group
written by exactly one shard; a deleted group is closed by its own shard only;
each shard's offsets-topic tail stores only its own groups' commits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import sqlalchemy as sa
from confluent_kafka.admin import AdminClient
from harness import cli_json
from kafka_setup import commit_without_joining, create_topic, produce

from monitor.shard import Shard
from monitor.store import Store, make_engine, read_group_lag, read_groups
from monitor.store.offsets_tail import read_commits, read_tail_status
from monitor.store.schema import consumer_groups, group_partitions, group_states, offset_samples, samples
from monitor.tail import build_offsets_tail

ROOT = Path(__file__).resolve().parents[2]
ONE, TWO = Shard(1, 2), Shard(2, 2)


def collect_once(env: dict[str, str], *extra: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "collect", "--once", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def writers_of(engine, group: str) -> set[str]:
    """The shards whose samples hold offsets of `group`."""
    g, gp, o, s = consumer_groups, group_partitions, offset_samples, samples
    with engine.connect() as conn:
        return set(
            conn.execute(
                sa.select(s.c.shard)
                .distinct()
                .select_from(o)
                .join(gp, gp.c.id == o.c.gp_id)
                .join(g, g.c.id == gp.c.group_ref)
                .join(s, s.c.id == o.c.sample_id)
                .where(g.c.group_id == group)
            ).scalars()
        )


def open_state_rows(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(
            conn.execute(
                sa.select(group_states.c.group_id, group_states.c.id).where(group_states.c.valid_to.is_(None))
            ).all()
        )


def test_two_shards_store_exactly_what_one_collector_stores(kafka, unique, tmp_path, caplog):
    topic = f"shards-{unique}"
    create_topic(kafka.bootstrap, topic, 3)
    produce(kafka.bootstrap, topic, {0: 40, 1: 25, 2: 10})
    names = [f"shards-{unique}-g{i}" for i in range(40)]
    mine, theirs = [g for g in names if ONE.owns(g)][:3], [g for g in names if TWO.owns(g)][:3]
    committed = {
        g: {(topic, p): (i * 3 + p * 2) % ends + 1 for p, ends in enumerate((40, 25, 10))}
        for i, g in enumerate(mine + theirs)
    }
    for g, offsets in committed.items():
        commit_without_joining(kafka.bootstrap, g, offsets)

    sharded_url, single_url = f"sqlite:///{tmp_path / 'sharded.db'}", f"sqlite:///{tmp_path / 'single.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAGMON_")}
    env.update(
        LAGMON_BOOTSTRAP_SERVERS=kafka.bootstrap,
        LAGMON_CLUSTER_NAME="test",
        LAGMON_OFFSETS_TOPIC="off",
        LAGMON_GROUP_ALLOW=f"^shards-{unique}-",
    )
    sharded = {**env, "LAGMON_DATABASE_URL": sharded_url}
    collect_once(sharded, "--shard", "1/2")
    collect_once({**sharded, "LAGMON_SHARD": "2/2"})
    collect_once({**env, "LAGMON_DATABASE_URL": single_url})

    engine, single = make_engine(sharded_url), make_engine(single_url)
    try:
        # what `groups --json` shows of both shards equals what one collector shows (but the sample times)
        def groups(url):
            return sorted(
                (
                    {k: v for k, v in row.items() if k != "LAST-SAMPLE (UTC)"}
                    for row in cli_json("groups", env={**env, "LAGMON_DATABASE_URL": url})
                ),
                key=lambda row: row["GROUP"],
            )

        assert [row["GROUP"] for row in groups(sharded_url)] == sorted(mine + theirs)
        assert groups(sharded_url) == groups(single_url)
        for g, offsets in committed.items():
            lag = read_group_lag(engine, "test", g)
            assert lag == read_group_lag(single, "test", g)
            assert {(p.topic, p.partition): (p.committed, p.log_end) for p in lag} == {
                tp: (offsets[tp], (40, 25, 10)[tp[1]]) for tp in offsets
            }
            assert writers_of(engine, g) == {(ONE if g in mine else TWO).label}

        # a deleted group of shard 1 is closed by shard 1; shard 2's open rows are left exactly as they were
        before = open_state_rows(engine)
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        admin.delete_consumer_groups([mine[0]], request_timeout=30)[mine[0]].result()
        collect_once(sharded, "--shard", "1/2")
        collect_once({**sharded, "LAGMON_SHARD": "2/2"})
        after = open_state_rows(engine)
        assert sorted(after) == sorted(mine[1:] + theirs)
        assert {g: after[g] for g in theirs} == {g: before[g] for g in theirs}
        assert [r.group_id for r in read_groups(engine, "test")] == sorted(mine[1:] + theirs)

        # each shard's offsets-topic tail keeps only its own groups' commits
        def tail_until_caught_up(shard: Shard) -> None:
            tail = build_offsets_tail(
                {"bootstrap.servers": kafka.bootstrap}, Store(engine, shard), "test", mode="on", span_s=3600
            )
            stop = threading.Event()
            thread = tail.start(stop)
            deadline = time.monotonic() + 30
            while tail.caught_up_at is None and time.monotonic() < deadline:
                time.sleep(0.1)
            stop.set()
            thread.join(10)
            assert tail.caught_up_at is not None, caplog.text

        tail_until_caught_up(TWO)
        assert {g for g in mine[1:] + theirs if read_commits(engine, "test", g)} == set(theirs)
        tail_until_caught_up(ONE)
        assert {g for g in mine[1:] + theirs if read_commits(engine, "test", g)} == set(mine[1:] + theirs)
        for g in mine[1:] + theirs:
            assert {(c.topic, c.partition): c.offset for c in read_commits(engine, "test", g)} == committed[g]
        assert {p.shard for p in read_tail_status(engine, "test")} == {"1/2", "2/2"}
    finally:
        engine.dispose()
        single.dispose()
