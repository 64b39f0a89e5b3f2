"""Group ids nobody should have chosen, end to end: a real cluster holds them, the real collector
stores them in PostgreSQL, and the CLI, the chat channel, /metrics and the dashboard (its tables are
what its CSV download exports) show them without obeying them (docs/production.md, "Names lagmon
does not choose").

Kafka's Java admin client commits for them (tests/support/HostileGroups.java): a C client cannot
send a NUL. Without stored names (monitor.names) the collector cannot store the first two at all.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request

from dashboard_seed import open_app
from harness import ROOT, chat_hook, chat_messages, run_cli, running, wait_for
from kafka_setup import create_topic, produce
from prometheus_client.parser import text_string_to_metric_families

from monitor import jvm
from monitor.demo import free_port
from monitor.devcluster import LIBS_DIR
from monitor.names import stored_name, visible

RULES = "rules:\n  - {name: behind, kind: lag_offsets, above: 10, severity: warning}\n"


def hostile_ids(unique: str) -> dict[str, str]:
    return {
        "nul": f"hostile-{unique}-nul\x00after",
        "long": f"hostile-{unique}-long-" + "x" * 10_000,
        "rtl": f"hostile-{unique}-rtl-\u202egnp.exe",
        "markup": f"hostile-{unique} @channel <!here> [click](http://evil.example) <b>bold</b>",
        "formula": f'=HYPERLINK("http://evil.example","hostile-{unique}")',
    }


def commit_as_java_would(bootstrap: str, topic: str, offset: int, groups) -> None:
    java = ["java", jvm.QUICK_JIT, "-cp", f"{LIBS_DIR}/*", "tests/support/HostileGroups.java"]
    done = subprocess.run(
        [*java, bootstrap, topic, str(offset), *(g.encode().hex() for g in groups)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def group_labels(port: int, unique: str) -> set[str]:
    """The `group` labels on /metrics that hold `unique`."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    families = text_string_to_metric_families(text)
    return {s.labels["group"] for f in families for s in f.samples if unique in s.labels.get("group", "")}


def test_hostile_group_ids_are_stored_and_shown_as_text_everywhere(
    kafka, postgres, unique, tmp_path, httpserver, monkeypatch
):
    ids = hostile_ids(unique)
    names = {kind: stored_name(g) for kind, g in ids.items()}
    topic = f"hostile-{unique}"
    create_topic(kafka.bootstrap, topic, 1)
    produce(kafka.bootstrap, topic, {0: 30})
    commit_as_java_would(kafka.bootstrap, topic, 5, ids.values())  # 25 behind: the rule fires for each
    (tmp_path / "rules.yaml").write_text(RULES)
    port = free_port(0)
    env = {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": postgres.new_database(),
        "LAGMON_GROUP_ALLOW": f"hostile-{unique}",
        "LAGMON_ALERTS_FILE": str(tmp_path / "rules.yaml"),
        "LAGMON_CHANNELS": f"hook={chat_hook(httpserver)}",
        "LAGMON_METRICS_PORT": str(port),
    }
    collect = [sys.executable, "-m", "monitor", "collect", "--interval", "1s"]
    with running(collect, env, tmp_path / "collect.log") as collector:
        wait_for(lambda: len(chat_messages(httpserver)) >= len(ids), 90, "a message for each hostile group")
        # one series name per group, the stored one; the NUL id librdkafka lists cut short (the only
        # name it has before the tail catches up) is gone once the offsets topic names the group
        wait_for(lambda: group_labels(port, unique) == set(names.values()), 60, "each group's stored name")
        assert collector.poll() is None
    log = (tmp_path / "collect.log").read_text(errors="replace")
    assert "Traceback" not in log and not re.search(r"Z (ERROR|CRITICAL) ", log), log[-3000:]

    # the stand-ins: short, no NUL, the same in every place below
    assert names["nul"] != ids["nul"] and names["long"] != ids["long"]
    assert all(len(n) < 120 and "\x00" not in n for n in names.values())

    # chat: each group once, its name as text (no mention, link or direction override acts)
    titles = sorted(m["title"] for m in chat_messages(httpserver))
    assert len(titles) == len(ids), titles
    for kind, name in names.items():
        [title] = [t for t in titles if visible(name) in t.replace("\u200b", "")]
        assert "\u202e" not in title and "\x00" not in title, kind
    [markup] = [m for m in chat_messages(httpserver) if "@\u200bchannel" in m["title"]]
    assert "@channel" not in markup["title"] + markup["message"] and "<!here>" not in markup["title"]

    # the CLI: the override and the NUL shown as escapes, the long id by its stand-in
    shown = run_cli("groups", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "\u202e" not in shown.stdout and "\x00" not in shown.stdout
    assert all(visible(name) in shown.stdout for name in names.values())

    # the dashboard: the table (and so its CSV download) holds the formula as text, and the group
    # page of a stand-in gives the whole id, its NUL as an escape
    monkeypatch.setenv("LAGMON_DATABASE_URL", env["LAGMON_DATABASE_URL"])
    [table] = [t for t in open_app().dataframe if "group" in t.value.columns]
    assert set(table.value["group"]) == {names[k] for k in names if k != "formula"} | {"'" + ids["formula"]}
    for kind in ("nul", "long"):
        page = open_app(page="group", group=names[kind])
        assert page.expander[0].label == f"The group's full id ({len(ids[kind]):,} characters)"
        assert visible(ids[kind]) in [t.value for t in page.text]
