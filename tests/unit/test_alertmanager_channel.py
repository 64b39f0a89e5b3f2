"""The Alertmanager channel's pure parts (URL, labels, the postable alert) and its HTTP post, against a
pytest-httpserver standing in for Alertmanager's v2 API. The real Alertmanager: tests/integration/test_alertmanager.py.
"""

from __future__ import annotations

import base64
import json

import pytest

from monitor.alerts.alertmanager import (
    ChannelError,
    build_alert,
    compute_labels,
    is_alertmanager,
    parse_target,
    post_alerts,
)
from monitor.alerts.notify import check_channels, send_message
from monitor.models import Alert, ConfigError

NOW = 1_700_000_000_000


def alert(**kw) -> Alert:
    kw.setdefault("fired_at", NOW - 60_000)
    kw.setdefault("summary", "lag 500 offsets (above 100)")
    return Alert(
        kw.pop("rule", "lag-high"),
        kw.pop("cluster", "prod"),
        kw.pop("group_id", "orders-app"),
        kw.pop("topic", ""),
        kw.pop("state", "firing"),
        kw.pop("severity", "critical"),
        kw.pop("started_at", NOW - 120_000),
        **kw,
    )


@pytest.mark.parametrize(
    "url, endpoint, auth, verify",
    [
        ("alertmanager://am", "http://am:9093/api/v2/alerts", None, True),
        ("alertmanager://am:9999/", "http://am:9999/api/v2/alerts", None, True),
        ("alertmanagers://am.example/prefix/am/", "https://am.example:9093/prefix/am/api/v2/alerts", None, True),
        ("ALERTMANAGERS://am:443?verify=no", "https://am:443/api/v2/alerts", None, False),
        ("alertmanager://[::1]:9093", "http://[::1]:9093/api/v2/alerts", None, True),
        ("alertmanager://u%40x:p%3Aw@am", "http://am:9093/api/v2/alerts", "u@x:p:w", True),
    ],
)
def test_urls(url, endpoint, auth, verify):
    target = parse_target(url)
    assert is_alertmanager(url)
    assert target.endpoint == endpoint and target.verify is verify
    got = target.authorization and base64.b64decode(target.authorization.split()[1]).decode()
    assert got == auth
    assert "p:w" not in repr(target)


@pytest.mark.parametrize(
    "url, message",
    [
        ("alertmanager://:9093", "not an alertmanager://host[:port][/prefix] URL"),
        ("alertmanager://user:s3cret@am:port", "the port is not a number"),
        ("alertmanager://am?token=s3cret", "unknown option 'token' (only verify=no)"),
        ("alertmanager://am?verify=maybe", "verify= takes yes or no"),
    ],
)
def test_a_bad_url_is_refused_by_the_channel_name_only(url, message):
    with pytest.raises(ConfigError) as e:
        check_channels({"am": url, "chat": "json://127.0.0.1/hook"})
    assert str(e.value).startswith("channel 'am': ") and message in str(e.value)
    assert "s3cret" not in str(e.value)


def test_alertmanager_urls_need_no_apprise():
    check_channels({"am": "alertmanager://am:9093", "am2": "alertmanagers://u:p@am/x"})
    assert not is_alertmanager("json://am:9093/hook")


def test_labels_are_the_rule_and_where_lagmon_own_win_and_names_become_valid():
    labels = compute_labels(
        alert(
            topic="orders", labels={"team": "payments", "alertname": "mine", "on-call.rota": "eu", "1x": "y", "e": ""}
        )
    )
    assert labels == {
        "alertname": "lag-high",
        "severity": "critical",
        "cluster": "prod",
        "group": "orders-app",
        "topic": "orders",
        "source": "lagmon",
        "team": "payments",
        "on_call_rota": "eu",
        "_1x": "y",
    }
    assert "group" not in compute_labels(alert(group_id="", topic=""))  # a cluster-wide alert


def test_a_firing_alert_ends_unless_posted_again_and_a_resolved_one_when_it_resolved():
    firing = build_alert(alert(), "firing", NOW, 240_000, "http://dash/")
    assert (firing["startsAt"], firing["endsAt"]) == ("2023-11-14T22:12:20.000Z", "2023-11-14T22:17:20.000Z")
    assert firing["annotations"]["summary"] == "orders-app @ prod: lag 500 offsets (above 100)"
    assert firing["generatorURL"] == "http://dash/?page=group&group=orders-app&cluster=prod&range=15m"
    resolved = build_alert(alert(state="resolved", resolved_at=NOW - 1000), "resolved", NOW, 240_000)
    assert resolved["endsAt"] == "2023-11-14T22:13:19.000Z" and resolved["labels"] == firing["labels"]
    assert "generatorURL" not in resolved and "dashboard" not in resolved["annotations"]
    assert resolved["annotations"]["description"].startswith("resolved; it was: lag 500")


def test_the_post_goes_to_the_prefix_with_basic_auth(httpserver):
    httpserver.expect_request("/am/api/v2/alerts", method="POST").respond_with_data("")
    posted = [build_alert(alert(), "firing", NOW, 240_000)]
    assert post_alerts(f"alertmanager://lagmon:s3cret@{httpserver.host}:{httpserver.port}/am", posted)
    (request, _), *_ = httpserver.log
    assert json.loads(request.get_data()) == posted
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"lagmon:s3cret").decode()
    assert request.headers["Content-Type"] == "application/json"


def test_a_refusal_is_said_without_the_url(httpserver):
    httpserver.expect_request("/api/v2/alerts").respond_with_data('"startsAt must be before endsAt"\n', status=400)
    url = f"alertmanager://lagmon:s3cret@{httpserver.host}:{httpserver.port}"
    with pytest.raises(ChannelError) as e:
        post_alerts(url, [build_alert(alert(), "firing", NOW, 240_000)])
    assert str(e.value) == 'Alertmanager answered HTTP 400: "startsAt must be before endsAt"'
    httpserver.clear()
    httpserver.expect_request("/api/v2/alerts").respond_with_data("s3cret in a page", status=503)
    with pytest.raises(ChannelError, match=r"^Alertmanager answered HTTP 503$"):
        post_alerts(url, [build_alert(alert(), "firing", NOW, 240_000)])
    with pytest.raises(ChannelError, match=r"^cannot reach Alertmanager \(Connection refused\)$"):
        post_alerts("alertmanager://lagmon:s3cret@127.0.0.1:9", [build_alert(alert(), "firing", NOW, 240_000)])


def test_a_redirect_is_an_error_and_the_password_goes_nowhere(httpserver):
    # urllib would follow it as a GET without the alerts, answered 200: delivered, and nothing posted
    elsewhere = f"http://{httpserver.host}:{httpserver.port}/elsewhere"
    httpserver.expect_request("/api/v2/alerts", method="POST").respond_with_data("", 302, {"Location": elsewhere})
    httpserver.expect_request("/elsewhere").respond_with_data("ok")
    url = f"alertmanager://lagmon:s3cret@{httpserver.host}:{httpserver.port}"
    with pytest.raises(ChannelError, match="HTTP 302: redirects are not followed") as caught:
        post_alerts(url, [{"labels": {"alertname": "a"}}])
    assert "s3cret" not in str(caught.value) and httpserver.host not in str(caught.value)
    assert [request.path for request, _ in httpserver.log] == ["/api/v2/alerts"]


def test_the_test_message_is_an_info_alert_that_ends_by_itself(httpserver):
    httpserver.expect_request("/api/v2/alerts", method="POST").respond_with_data("")
    assert send_message(f"alertmanager://{httpserver.host}:{httpserver.port}", "🧪 lagmon test message", "hello")
    ((request, _),) = httpserver.log
    (posted,) = json.loads(request.get_data())
    assert posted["labels"] == {"alertname": "lagmon-test", "severity": "info", "source": "lagmon"}
    assert posted["annotations"] == {"summary": "🧪 lagmon test message", "description": "hello"}
    assert posted["endsAt"] > posted["startsAt"]
    assert not send_message("alertmanager://127.0.0.1:9", "t", "b")  # nobody there: False, not an exception
