"""lagmon's alerts in a real Alertmanager (Debian's prometheus-alertmanager, tests/support/alertmanager_server.py).

The alerts come through lagmon's real path: collector cycles -> health stage -> alert engine -> outbox ->
the sender thread, on a SQLite store. Kafka is a scripted stand-in (factories.LagSwitch): the subject is
the channel. Alertmanager routes everything to a webhook (pytest-httpserver) grouped by alertname, so what
it notifies is observed too. The clock is the real one, as Alertmanager's is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from datetime import datetime

import pytest
import yaml
from alertmanager_server import Alertmanager
from factories import LagSwitch
from harness import ROOT, log_records, run_cli, wait_for

from monitor.alerts.alertmanager import compute_labels
from monitor.alerts.engine import AlertEngine
from monitor.alerts.notify import OutboxSender
from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.models import Alert
from monitor.store import Store, make_engine, upgrade
from monitor.store.alerts import read_outbox

RESEND_S = 1.0  # each post says the alert ends 4 s later unless posted again
DASH = "http://dash.local/"
RULES = """
rules:
  - {name: lag-high, kind: lag_offsets, above: 100, severity: warning, labels: {team: payments}}
"""


class Lagmon:
    """A collector over a LagSwitch with the alert engine, and its outbox sender running in a thread."""

    def __init__(self, db_url: str, channel: str, groups=("orders-app", "billing-app")):
        self.engine = make_engine(db_url)
        rules = parse_rules(RULES, "rules.yaml", {"am": channel})
        self.reports = log_records("lagmon.alerts")  # what the sender logs
        self.switch = LagSwitch("prod", groups)
        self.sender = OutboxSender(self.engine, "prod", rules.channels, dashboard_url=DASH, resend_s=RESEND_S)
        alerts = AlertEngine(self.engine, "prod", rules, dashboard_url=DASH, sender=self.sender)
        stage = HealthStage(self.engine, HealthEngine("prod", rules.evaluator))
        self.collector = Collector(self.switch, Store(self.engine), "prod", health=stage, observers=[alerts])
        self.stop = threading.Event()

    def __enter__(self):
        self.thread = self.sender.start(self.stop)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=15)
        self.engine.dispose()
        return False

    def poll(self, lagging) -> None:
        self.switch.lagging = set(lagging)
        self.collector.poll_once()


@pytest.fixture
def hook(httpserver) -> str:
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    return httpserver.url_for("/hook")


@pytest.fixture
def alertmanager(hook):
    am = Alertmanager(hook)
    yield am
    am.destroy()


@pytest.fixture
def db_url(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'lagmon.db'}"
    upgrade(url)
    return url


def notifications(httpserver, status: str | None = None) -> list[dict]:
    """What Alertmanager sent to the webhook, oldest first (of one status if given)."""
    sent = [json.loads(r.get_data()) for r, _ in httpserver.log if r.path == "/hook"]
    return [n for n in sent if status is None or n["status"] == status]


def groups_of(notification: dict) -> list[str]:
    return sorted(a["labels"]["group"] for a in notification["alerts"])


def when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_alerts_appear_grouped_stay_alive_while_firing_and_resolve(alertmanager, httpserver, db_url):
    alertmanager.start()
    with Lagmon(db_url, alertmanager.channel) as lagmon:
        lagmon.poll({"orders-app", "billing-app"})
        held = wait_for(
            lambda: len(alertmanager.alerts(source="lagmon")) == 2 and alertmanager.alerts(), 20, "2 alerts"
        )
        orders = next(a for a in held if a["labels"]["group"] == "orders-app")
        assert orders["labels"] == {
            "alertname": "lag-high",
            "severity": "warning",
            "cluster": "prod",
            "group": "orders-app",
            "source": "lagmon",
            "team": "payments",
        }
        assert orders["status"]["state"] == "active"
        assert orders["annotations"]["summary"] == "orders-app @ prod: lag 500 offsets (above 100)"
        assert "Lag: 500 offsets" in orders["annotations"]["description"]
        assert orders["annotations"]["dashboard"].startswith(f"{DASH}?page=group&group=orders-app&cluster=prod")
        assert orders["generatorURL"] == orders["annotations"]["dashboard"]

        # One rule, two groups: one Alertmanager group (route group_by: [alertname]), one notification.
        (group,) = [g for g in alertmanager.groups() if g["labels"] == {"alertname": "lag-high"}]
        assert sorted(a["labels"]["group"] for a in group["alerts"]) == ["billing-app", "orders-app"]
        firing = wait_for(
            lambda: [n for n in notifications(httpserver, "firing") if len(n["alerts"]) == 2],
            20,
            "a notification of both alerts",
        )
        assert firing[0]["groupLabels"] == {"alertname": "lag-high"}
        assert groups_of(firing[0]) == ["billing-app", "orders-app"]
        notified = len(notifications(httpserver, "firing"))

        # Re-posted while firing: past the end the first post announced, the alert is still there, ending later.
        first_end = when(orders["endsAt"])
        time.sleep(max(0.0, first_end - time.time()) + 1.5)
        again = alertmanager.alerts(group="orders-app")
        assert len(again) == 1 and when(again[0]["endsAt"]) > first_end + 1
        assert again[0]["startsAt"] == orders["startsAt"] and again[0]["fingerprint"] == orders["fingerprint"]
        assert len(notifications(httpserver, "firing")) == notified  # the same alerts: nobody notified again

        lagmon.poll(set())  # both groups caught up
        wait_for(lambda: alertmanager.alerts(source="lagmon") == [], 20, "the alerts to resolve")
        wait_for(lambda: notifications(httpserver, "resolved"), 20, "the resolved notification")
        # Each resolution is posted apart, so Alertmanager may flush its group between the two posts (it did in
        # a CI run: orders-app's resolution in one notification, billing-app's in the next): each is said resolved.
        ended = [a for n in notifications(httpserver) for a in n["alerts"] if a["status"] == "resolved"]
        assert {a["labels"]["group"] for a in ended} == {"billing-app", "orders-app"}
        assert all(when(a["endsAt"]) <= time.time() for a in ended)
        outbox = read_outbox(lagmon.engine)
    assert [(r.kind, r.channel, r.attempts, r.sent_at is not None) for r in outbox] == [
        ("firing", "am", 1, True),
        ("firing", "am", 1, True),
        ("resolved", "am", 1, True),
        ("resolved", "am", 1, True),
    ]
    assert lagmon.reports == []


def test_an_outage_delays_the_alert_but_never_loses_or_doubles_it(alertmanager, httpserver, db_url):
    with Lagmon(db_url, alertmanager.channel, groups=("orders-app",)) as lagmon:
        lagmon.poll({"orders-app"})  # Alertmanager is not running yet
        wait_for(lambda: read_outbox(lagmon.engine)[0].attempts >= 2, 20, "two failed attempts")
        (row,) = read_outbox(lagmon.engine)
        assert row.sent_at is None and row.last_error == "channel 'am': cannot reach Alertmanager (Connection refused)"
        assert lagmon.reports == [
            "alert message not sent, will retry: channel 'am': cannot reach Alertmanager (Connection refused)"
        ]
        alertmanager.start()
        wait_for(lambda: read_outbox(lagmon.engine)[0].sent_at, 30, "the queued message to go out")
        (held,) = wait_for(lambda: alertmanager.alerts(source="lagmon"), 10, "the alert")
        wait_for(lambda: notifications(httpserver, "firing"), 20, "the firing notification")

    # lagmon restarts while the alert fires: it queues nothing new and sends nothing twice; its
    # re-posts are the same alert to Alertmanager, which notifies nobody again.
    with Lagmon(db_url, alertmanager.channel, groups=("orders-app",)) as lagmon:
        lagmon.poll({"orders-app"})
        time.sleep(4 * RESEND_S)
        assert [a["fingerprint"] for a in alertmanager.alerts(source="lagmon")] == [held["fingerprint"]]
        assert len(notifications(httpserver, "firing")) == 1
        assert [(r.kind, r.sent_at is not None) for r in read_outbox(lagmon.engine)] == [("firing", True)]

        # Alertmanager restarts and forgets every alert (it keeps only silences and what it notified):
        # the next re-post brings it back.
        alertmanager.stop()
        alertmanager.start()
        assert alertmanager.alerts(source="lagmon") == []
        wait_for(lambda: alertmanager.alerts(source="lagmon"), 20, "the alert to be posted again")

        lagmon.poll(set())
        wait_for(lambda: alertmanager.alerts(source="lagmon") == [], 20, "the alert to resolve")
        # Alertmanager has the resolution a moment before the sender marks its row sent (seen: once in
        # three fresh-clone runs the test read the row in between), so wait for the row too.
        wait_for(lambda: len(read_outbox(lagmon.engine)) == 2 and read_outbox(lagmon.engine)[1].sent_at, 20, "sent")
        outbox = read_outbox(lagmon.engine)
    assert [(r.kind, r.sent_at is not None) for r in outbox] == [("firing", True), ("resolved", True)]


def test_alerts_test_posts_a_test_alert_through_the_configured_channel(alertmanager):
    alertmanager.start()
    done = run_cli("alerts", "test", "--channel", "am", env={"LAGMON_CHANNELS": f"am={alertmanager.channel}"})
    assert done.returncode == 0, done.stderr
    assert "the message was accepted" in done.stdout and alertmanager.channel not in done.stdout + done.stderr
    (posted,) = wait_for(lambda: alertmanager.alerts(alertname="lagmon-test"), 10, "the test alert")
    assert posted["labels"] == {"alertname": "lagmon-test", "severity": "info", "source": "lagmon"}


EXAMPLE = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"


def amtool(*args: str) -> str:
    done = subprocess.run(
        [shutil.which("amtool") or "amtool", *args], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def test_the_shipped_routing_example_is_valid_and_routes_lagmons_alerts_as_documented():
    assert "SUCCESS" in amtool("check-config", str(EXAMPLE))
    route = lambda *labels: amtool("config", "routes", "test", f"--config.file={EXAMPLE}", *labels)  # noqa: E731
    assert route("source=lagmon", "alertname=consumer-stopped", "severity=critical") == "kafka-pager"
    assert route("source=lagmon", "alertname=lag-seconds-high", "severity=warning") == "kafka-team"
    labels = [
        f"{k}={v}" for k, v in prometheus_alert("LagmonGroupError", cluster_name="prod", group="o")["labels"].items()
    ]
    assert route(*labels) == "kafka-pager"  # the Prometheus rules' alerts take the same route
    assert route("alertname=HighCPU", "severity=critical") == "default"
    assert EXAMPLE.read_text() in (ROOT / "docs" / "production.md").read_text()  # the page shows it as it is


def prometheus_alert(name: str, **series: str) -> dict:
    """The labels Prometheus gives the firing alert `name` of the shipped rules over a series labelled `series`."""
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "lagmon-rules.yml").read_text())
    (rule,) = [r for g in rules["groups"] for r in g["rules"] if r["alert"] == name]
    own = {k: v.replace("{{ $labels.cluster_name }}", series["cluster_name"]) for k, v in rule["labels"].items()}
    return {"labels": {"alertname": name, **series, **own}}


def lagmon_alert(rule: str, severity: str, cluster: str, group: str) -> dict:
    """The labels lagmon's own engine posts for a firing alert of `rule`."""
    firing = Alert(rule, cluster, group, "", "firing", severity, 1_700_000_000_000)
    return {"labels": compute_labels(firing)}


def test_the_example_inhibits_across_lagmons_own_alerts_and_its_prometheus_rules(hook):
    """One cluster label scheme: a critical alert mutes its group's warnings, and a collector that does not
    sample mutes its cluster's group alerts, whichever path (lagmon or Prometheus) sent each."""
    example = yaml.safe_load(EXAMPLE.read_text())
    example["receivers"] = [{"name": r["name"], "webhook_configs": [{"url": "{hook}"}]} for r in example["receivers"]]
    am = Alertmanager(hook, config=yaml.safe_dump(example).replace("'{hook}'", "{hook}")).start()
    try:
        am.post(
            [
                prometheus_alert("LagmonGroupError", cluster_name="prod", group="orders"),
                lagmon_alert("lag-seconds-high", "warning", "prod", "orders"),
                lagmon_alert("consumer-stopped", "critical", "prod", "payments"),
                prometheus_alert("LagmonGroupLagHigh", cluster_name="prod", group="payments"),
                lagmon_alert("lag-seconds-high", "warning", "prod", "billing"),
                prometheus_alert("LagmonCollectorNotSampling", cluster_name="staging", instance="lagmon:9308"),
                lagmon_alert("lag-seconds-high", "warning", "staging", "orders"),
            ]
        )

        def states():
            return {
                (a["labels"]["alertname"], a["labels"]["cluster"], a["labels"].get("group")): a["status"]["state"]
                for a in am.alerts(source="lagmon")
            }

        expected = {
            ("LagmonGroupError", "prod", "orders"): "active",
            ("lag-seconds-high", "prod", "orders"): "suppressed",  # by Prometheus' critical
            ("consumer-stopped", "prod", "payments"): "active",
            ("LagmonGroupLagHigh", "prod", "payments"): "suppressed",  # by lagmon's critical
            ("lag-seconds-high", "prod", "billing"): "active",  # nothing critical on billing
            ("LagmonCollectorNotSampling", "staging", None): "active",
            ("lag-seconds-high", "staging", "orders"): "suppressed",  # its numbers are stale
        }
        wait_for(lambda: states() == expected, 15, f"inhibitions as the example says (now {states()})")
    finally:
        am.destroy()
