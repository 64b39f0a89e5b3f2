"""Collectors that share one store and one chat channel: two shards of a cluster, and a collector of
another cluster. Each alert message reaches the channel once (docs/production.md, "Alerts").

Each runs the real `collect` (supervisor, worker, alert engine and outbox sender) on one SQLite file
at a 1 s interval, with a lag rule that fires at once to one HTTP hook that counts what arrives. The
hook takes a second to answer, as a busy chat service may: the senders' drains overlap.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter

from harness import chat_messages, running, wait_for
from kafka_setup import commit_without_joining, create_topic, produce
from werkzeug import Response

from monitor.shard import Shard

RULES = "rules:\n  - {name: behind, kind: lag_offsets, above: 10, severity: warning}\n"


def groups_on_both_shards(unique: str) -> list[str]:
    """Two group ids for each shard of two."""
    names = [f"shared-{unique}-{i}-group" for i in range(100)]
    return [g for g in names if Shard(1, 2).owns(g)][:2] + [g for g in names if Shard(2, 2).owns(g)][:2]


def slow_hook(httpserver) -> str:
    """A json:// channel URL to `httpserver` that accepts each message after a second."""

    def accept(request) -> Response:
        time.sleep(1)
        return Response("ok")

    httpserver.expect_request("/hook", method="POST").respond_with_handler(accept)
    return f"json://{httpserver.host}:{httpserver.port}/hook"


def test_collectors_sharing_a_store_and_a_channel_send_each_message_once(kafka, unique, tmp_path, httpserver):
    topic, groups = f"shared-{unique}", groups_on_both_shards(unique)
    create_topic(kafka.bootstrap, topic, 1)
    produce(kafka.bootstrap, topic, {0: 30})
    for group in groups:  # 25 behind, and staying there
        commit_without_joining(kafka.bootstrap, group, {(topic, 0): 5})
    (tmp_path / "rules.yaml").write_text(RULES)
    env = {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'shared.db'}",
        "LAGMON_GROUP_ALLOW": f"^shared-{unique}-",
        "LAGMON_ALERTS_FILE": str(tmp_path / "rules.yaml"),
        "LAGMON_CHANNELS": f"hook={slow_hook(httpserver)}",
    }
    collect = [sys.executable, "-m", "monitor", "collect", "--interval", "1s"]
    with (
        running([*collect, "--shard", "1/2"], {**env, "LAGMON_CLUSTER_NAME": "east"}, tmp_path / "east-1.log"),
        running([*collect, "--shard", "2/2"], {**env, "LAGMON_CLUSTER_NAME": "east"}, tmp_path / "east-2.log"),
        running(collect, {**env, "LAGMON_CLUSTER_NAME": "west"}, tmp_path / "west.log"),
    ):
        expected = {f"{group} @ {cluster}" for group in groups for cluster in ("east", "west")}
        wait_for(lambda: len(chat_messages(httpserver)) >= len(expected), 90, "a message for each group and cluster")
        time.sleep(5)  # room for a message sent twice: every sender looks at the outbox at least this often
    arrived = Counter(m["title"].split(": ", 1)[1] for m in chat_messages(httpserver))
    assert arrived == Counter(expected), arrived
