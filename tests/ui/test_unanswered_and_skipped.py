"""What the collector could not read is shown as such.

A group Kafka did not answer for in the newest cycle (a broker restarting, a coordinator moving) is
shown as its last answer, said so, with the time of that answer: on the Overview, the group page and
in the CLI (written through the real Store from the collector's own carry, compute_carried). Records
of __consumer_offsets the tail skipped are counted and named on the Health page."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from dashboard_seed import open_app
from factories import make_group, make_snapshot
from harness import run_cli

from monitor.collector import compute_carried
from monitor.offsets_topic.history import TailUpdate
from monitor.output import fmt_time
from monitor.store import Store, make_engine, read_groups, read_unanswered, upgrade
from monitor.store.offsets_tail import write_tail_update

STEP_MS = 10_000
COMMITTED = {"fine": 40, "moved": 70}


def snapshot(taken_at: int, answered: tuple[str, ...], errors=()):
    groups = [make_group(g, committed={("t-" + g, 0): COMMITTED[g]}) for g in answered]
    return make_snapshot(taken_at, cluster="prod", groups=groups, errors=errors)


@pytest.fixture
def partial_db(app_db_url):
    """Three cycles: both groups answered twice, then `moved`'s coordinator did not answer."""
    engine = make_engine(app_db_url)
    upgrade(engine)
    store = Store(engine)
    first = int(datetime.now(UTC).timestamp() * 1000) - 3 * STEP_MS
    prev = None
    for i, answered in enumerate([("fine", "moved"), ("fine", "moved"), ("fine",)]):
        errors = ("describe moved: Broker: Coordinator load in progress",) if len(answered) == 1 else ()
        prev = compute_carried(prev, snapshot(first + i * STEP_MS, answered, errors))
        store.write_snapshot(prev)
    yield engine, first + STEP_MS
    engine.dispose()


def test_the_store_names_the_unanswered_group_and_when_kafka_last_answered(partial_db):
    engine, last_answered = partial_db
    assert read_unanswered(engine, "prod") == {"moved": last_answered}
    rows = {g.group_id: g for g in read_groups(engine, "prod")}
    assert (rows["moved"].last_answered_at, rows["fine"].last_answered_at) == (last_answered, None)
    assert rows["moved"].total_lag == 100 - COMMITTED["moved"]  # its last answer, kept


def test_an_answer_again_clears_it(partial_db):
    engine, last_answered = partial_db
    Store(engine).write_snapshot(snapshot(last_answered + 3 * STEP_MS, ("fine", "moved")))
    assert read_unanswered(engine, "prod") == {}


def test_the_overview_says_kafka_did_not_answer_and_since_when(partial_db):
    _, last_answered = partial_db
    at = open_app(utc="1")
    [warning] = [w.value for w in at.warning]
    assert warning.startswith("Kafka did not answer for 1 group(s) in the newest cycle (moved)")
    table = at.dataframe[0].value.set_index("group")
    assert table.loc["moved", "no answer since (UTC)"] == fmt_time(last_answered)
    assert table.loc["fine", "no answer since (UTC)"] == "—"


def test_the_group_page_says_its_numbers_are_the_last_answer(partial_db):
    _, last_answered = partial_db
    at = open_app(page="group", group="moved", utc="1")
    assert any(
        w.value.startswith("Kafka did not answer for this group") and fmt_time(last_answered) in w.value
        for w in at.warning
    )
    assert not [w for w in open_app(page="group", group="fine").warning if "did not answer" in w.value]


def test_the_cli_marks_the_group_and_says_when_it_last_answered(partial_db, app_db_url):
    _, last_answered = partial_db
    env = {"LAGMON_DATABASE_URL": app_db_url}
    groups = run_cli("groups", env=env)
    assert groups.returncode == 0, groups.stderr
    states = {line.split()[1]: line.split()[2] for line in groups.stdout.splitlines()[1:] if line.startswith("prod")}
    assert states == {"fine": "Stable", "moved": "Stable?"}
    assert "? Kafka did not answer for this group in the newest cycle" in groups.stdout
    lag = run_cli("lag", "moved", "--json", env=env)
    assert lag.returncode == 0, lag.stderr
    assert f"these are its last answer, from {fmt_time(last_answered)} UTC" in lag.stderr
    assert [p["LAG"] for p in json.loads(lag.stdout)] == [100 - COMMITTED["moved"]]
    assert "did not answer" not in run_cli("lag", "fine", env=env).stderr


def test_the_health_page_counts_and_names_the_records_the_tail_skipped(partial_db):
    engine, _ = partial_db
    update = TailUpdate(positions={0: 50, 1: 9}, failures={1: (2, "__consumer_offsets-1 offset 8: cannot apply X")})
    write_tail_update(Store(engine), "prod", update, int(datetime.now(UTC).timestamp() * 1000))
    at = open_app(page="health")
    assert any(
        w.value.startswith("The tail skipped 2 record(s) of `__consumer_offsets`") and "offset 8" in w.value
        for w in at.warning
    )
    [tail] = [d.value for d in at.dataframe if "skipped records" in d.value.columns]
    assert tail[["partition", "skipped records"]].to_dict("records") == [
        {"partition": 0, "skipped records": 0},
        {"partition": 1, "skipped records": 2},
    ]
