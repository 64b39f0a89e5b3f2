"""Alertmanager as a channel: `alertmanager://host:port/prefix` posts lagmon's alerts to its v2 API.

Apprise has no Alertmanager plugin, so this is the channel's own sender, beside the Apprise
path in monitor.alerts.notify. A channel URL

    alertmanager://[user:password@]host[:port][/path-prefix][?verify=no]

posts to http://host:port/path-prefix/api/v2/alerts (`alertmanagers://` for HTTPS, port 9093
unless given; `verify=no` accepts a certificate that does not verify). User and password are
sent as HTTP basic auth. Like every channel URL it is a secret: nothing here puts it, or any
part of it, into an error message.

An alert is identified in Alertmanager by its labels, so posting the same alert again is
harmless: that is how a firing alert stays alive (each post says when it ends unless posted
again, as Prometheus does: four times the re-post interval later) and how a message sent
twice after a crash stays one alert. Its resolution is the same labels with `endsAt` at the
moment it resolved.
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qs, unquote, urlsplit

from monitor.alerts.message import compose_message, compute_dashboard_link, describe_where
from monitor.models import RESOLVED, Alert, ConfigError

SCHEMES = {"alertmanager": "http", "alertmanagers": "https"}
DEFAULT_PORT = 9093
SOURCE = "lagmon"  # the `source` label of every alert lagmon posts
LIFETIME_FACTOR = 4  # a firing alert ends this many re-post intervals after a post, unless posted again
TIMEOUT_S = 10.0
BATCH = 256  # alerts per POST when re-posting many
_LABEL_NAME = re.compile(r"[^a-zA-Z0-9_]")


class ChannelError(Exception):
    """A send that failed, in words that are safe to log: never the URL, its host or its credentials."""


@dataclass(frozen=True, repr=False)
class Target:
    """Where and how to POST; repr=False: it holds the credentials."""

    endpoint: str  # scheme://host:port/prefix/api/v2/alerts, without credentials
    authorization: str | None = None
    verify: bool = True


def is_alertmanager(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SCHEMES


def parse_target(url: str) -> Target:
    """The POST target of an alertmanager:// URL; ConfigError (that never repeats the URL) if it is not one."""
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise ConfigError("not an alertmanager://host:port URL (the port is not a number)") from None
    scheme = SCHEMES.get(parts.scheme.lower())
    if scheme is None or not parts.hostname:
        raise ConfigError("not an alertmanager://host[:port][/prefix] URL")
    query = parse_qs(parts.query)
    unknown = set(query) - {"verify"}
    if unknown:
        raise ConfigError(f"unknown option {sorted(unknown)[0]!r} (only verify=no)")
    verify = query.get("verify", ["yes"])[-1].lower()
    if verify not in ("yes", "no", "true", "false", "1", "0"):
        raise ConfigError("verify= takes yes or no")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    prefix = parts.path.rstrip("/")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode()
    return Target(f"{scheme}://{host}:{port}{prefix}/api/v2/alerts", authorization, verify not in ("no", "false", "0"))


def _rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _label_name(name: str) -> str:
    """Alertmanager 0.25 wants [a-zA-Z_][a-zA-Z0-9_]*: other characters become _."""
    name = _LABEL_NAME.sub("_", name)
    return f"_{name}" if not name or name[0].isdigit() else name


def compute_labels(alert: Alert) -> dict[str, str]:
    """The alert's identity in Alertmanager: the rule's own labels, then lagmon's (which win), empty ones left out."""
    labels = {_label_name(str(k)): str(v) for k, v in alert.labels.items()}
    labels.update(
        alertname=alert.rule,
        severity=alert.severity,
        cluster=alert.cluster,
        group=alert.group_id,
        topic=alert.topic,
        source=SOURCE,
    )
    return {k: v for k, v in labels.items() if v != ""}


def build_alert(alert: Alert, kind: str, now: int, lifetime_ms: int, dashboard_url: str | None = None) -> dict:
    """One postable alert (v2 API) for a firing, repeat or resolved notification sent at `now`.

    A firing alert ends `lifetime_ms` after `now` unless posted again; a resolved one ends when it
    resolved. The annotations are the chat message as of `now` and the dashboard link.
    """
    resolved = kind == RESOLVED
    _, body = compose_message(alert, kind, now, dashboard_url)
    link = compute_dashboard_link(dashboard_url, alert.cluster, alert.group_id, alert.started_at, now)
    annotations = {"summary": f"{describe_where(alert)}: {alert.summary}", "description": body}
    if link:
        annotations["dashboard"] = link
    ends = (alert.resolved_at or now) if resolved else now + lifetime_ms
    posted = {
        "labels": compute_labels(alert),
        "annotations": annotations,
        "startsAt": _rfc3339(alert.fired_at or alert.started_at),
        "endsAt": _rfc3339(ends),
    }
    if link:
        posted["generatorURL"] = link
    return posted


def build_test_alert(title: str, body: str, now: int, lifetime_ms: int = 300_000) -> dict:
    """What `alerts test` posts: an info alert named lagmon-test that ends by itself."""
    return {
        "labels": {"alertname": "lagmon-test", "severity": "info", "source": SOURCE},
        "annotations": {"summary": title, "description": body},
        "startsAt": _rfc3339(now),
        "endsAt": _rfc3339(now + lifetime_ms),
    }


def post_alerts(url: str, posted: list[dict]) -> bool:
    """POST /api/v2/alerts; True when Alertmanager took them. ChannelError (safe to log) when it did not."""
    try:
        target = parse_target(url)
    except ConfigError as e:
        raise ChannelError(str(e)) from None
    headers = {"Content-Type": "application/json"}
    if target.authorization:
        headers["Authorization"] = target.authorization
    context = None
    if target.endpoint.startswith("https:") and not target.verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    for start in range(0, max(1, len(posted)), BATCH):
        request = urllib.request.Request(
            target.endpoint,
            data=json.dumps(posted[start : start + BATCH]).encode(),
            headers=headers,
            method="POST",
        )
        opener = urllib.request.build_opener(_Refuse3xx, urllib.request.HTTPSHandler(context=context))
        try:
            with opener.open(request, timeout=TIMEOUT_S) as response:
                response.read()
        except urllib.error.HTTPError as e:
            why = ": redirects are not followed (fix the URL)" if 300 <= e.code < 400 else _reason(e)
            raise ChannelError(f"Alertmanager answered HTTP {e.code}{why}") from None
        except urllib.error.URLError as e:
            raise ChannelError(f"cannot reach Alertmanager ({_cause(e.reason)})") from None
        except (TimeoutError, OSError) as e:
            raise ChannelError(f"cannot reach Alertmanager ({_cause(e)})") from None
    return True


class _Refuse3xx(urllib.request.HTTPRedirectHandler):
    """urllib would follow a redirect of the POST as a bodiless GET, carrying the basic-auth header to
    wherever it points, and take the 200 for delivery: a redirect is an error instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises the 3xx as an HTTPError


def _reason(e: urllib.error.HTTPError) -> str:
    """Alertmanager's own explanation of a 400 (it names the field), kept short."""
    try:
        text = e.read(300).decode(errors="replace").strip()
    except Exception:
        return ""
    return f": {text.splitlines()[0][:200]}" if text and e.code == 400 else ""


def _cause(reason: object) -> str:
    """The OS's words without the address (socket errors say 'Connection refused', not where)."""
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, ssl.SSLError):
        return f"TLS: {getattr(reason, 'reason', None) or type(reason).__name__}"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return type(reason).__name__
