"""Alert rules from a YAML or TOML file (pure parsing; the caller reads the file).

A broken file is one ConfigError that names the file and the line, so the
collector refuses to start instead of silently running with fewer rules.
Channel URLs are secrets: they are kept out of every repr and error message.
See monitor/alerts/default_rules.yaml for the documented format.
"""

from __future__ import annotations

import enum
import functools
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from monitor.config import parse_duration
from monitor.config.parse import duration_between
from monitor.health.rules import HealthSettings
from monitor.models import ConfigError, Filter, Status

DEFAULT_RULES_FILE = Path(__file__).with_name("default_rules.yaml")


class Severity(enum.StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class RuleKind(enum.StrEnum):
    """What a rule watches (docs/alerts.md, "Rule kinds")."""

    LAG_OFFSETS = "lag_offsets"
    LAG_SECONDS = "lag_seconds"
    STATUS = "status"
    REBALANCES = "rebalances"
    EMPTY_WITH_LAG = "empty_with_lag"
    MEMBERS_BELOW = "members_below"
    COORDINATOR_MOVED = "coordinator_moved"
    COLLECTOR_UNHEALTHY = "collector_unhealthy"
    SHARE_REDELIVERY = "share_redelivery"


# kind -> (required keys, optional keys) beyond the common ones
KINDS: dict[RuleKind, tuple[tuple[str, ...], tuple[str, ...]]] = {
    RuleKind.LAG_OFFSETS: (("above",), ("per_topic",)),
    RuleKind.LAG_SECONDS: (("above",), ("per_topic",)),
    RuleKind.STATUS: (("in",), ()),
    RuleKind.REBALANCES: (("more_than", "within"), ()),
    RuleKind.EMPTY_WITH_LAG: ((), ()),
    RuleKind.MEMBERS_BELOW: (("below",), ()),
    RuleKind.COORDINATOR_MOVED: ((), ("within",)),
    RuleKind.COLLECTOR_UNHEALTHY: ((), ()),
    RuleKind.SHARE_REDELIVERY: ((), ("delivery_limit", "within")),
}
COMMON = ("name", "kind", "severity", "for", "repeat", "groups", "topics", "labels", "channels")
DEFAULT_REPEAT_S = 4 * 3600.0
DEFAULT_WITHIN_S = 600.0
DEFAULT_DELIVERY_LIMIT = 5  # Kafka's group.share.delivery.count.limit default: a record is archived after 5 deliveries
DAY_S = 86400.0
# key -> (shortest, longest) seconds: outside them a duration is a typo (a repeat every millisecond floods
# a chat; a window of years is never reached). docs/alerts.md lists them.
DURATION_BOUNDS = {"for": (1.0, 7 * DAY_S), "repeat": (60.0, 30 * DAY_S), "within": (1.0, 7 * DAY_S)}
MAX_WINDOW = 1000  # evaluation.window: offsets kept per partition


@dataclass(frozen=True)
class Rule:
    name: str
    kind: RuleKind
    severity: Severity = Severity.WARNING
    for_s: float = 0.0
    repeat_s: float = DEFAULT_REPEAT_S
    above: float | None = None  # lag_offsets, lag_seconds
    statuses: frozenset[Status] = frozenset()  # status
    more_than: int | None = None  # rebalances
    below: int | None = None  # members_below
    within_s: float = DEFAULT_WITHIN_S  # rebalances, coordinator_moved, share_redelivery (archived records)
    delivery_limit: int = DEFAULT_DELIVERY_LIMIT  # share_redelivery: the groups' share.delivery.count.limit
    per_topic: bool = False
    groups: Filter = Filter()
    topics: Filter = Filter()
    labels: dict[str, str] = field(default_factory=dict)
    channels: tuple[str, ...] = ()
    line: int = 0  # where the rule starts in its file


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    channels: dict[str, str] = field(default_factory=dict, repr=False)  # name -> Apprise URL (secret)
    evaluator: HealthSettings = HealthSettings()
    source: str = ""

    def rule(self, name: str) -> Rule | None:
        return self._by_name.get(name)

    @functools.cached_property
    def _by_name(self) -> dict[str, Rule]:
        return {r.name: r for r in self.rules}


def load_rules(path: str | Path | None, channels: dict[str, str] | None = None) -> RuleSet:
    """The rules in `path` (default: the shipped set), with `channels` (from LAGMON_CHANNELS) on top."""
    path = Path(path) if path else DEFAULT_RULES_FILE
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"LAGMON_ALERTS_FILE: cannot read {path}: {e.strerror}") from e
    return parse_rules(text, str(path), channels or {}, toml=path.suffix == ".toml")


def parse_rules(text: str, source: str, extra_channels: dict[str, str] | None = None, toml: bool = False) -> RuleSet:
    data, lines = _load_toml(text, source) if toml else _load_yaml(text, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source} line 1: expected a mapping with a `rules:` list")
    top_lines = lines.get(id(data), {})
    unknown = set(data) - {"rules", "channels", "evaluation"}
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(
            f"{source} line {top_lines.get(key, 1)}: unknown top-level key {key!r} "
            f"(expected rules, channels, evaluation)"
        )

    def err(line, message):
        return ConfigError(f"{source} line {line}: {message}")

    file_channels = data.get("channels") or {}
    if not isinstance(file_channels, dict) or not all(
        isinstance(v, str) and "://" in v for v in file_channels.values()
    ):
        raise err(top_lines.get("channels", 1), "channels: expected name: scheme://... pairs")
    channels = {**{str(k): v for k, v in file_channels.items()}, **(extra_channels or {})}

    evaluator = _evaluator(data.get("evaluation") or {}, lines, top_lines.get("evaluation", 1), err)

    raw_rules = data.get("rules")
    if raw_rules is None:
        raw_rules = []
    if not isinstance(raw_rules, list):
        raise err(top_lines.get("rules", 1), "rules: expected a list of rules")
    rules: list[Rule] = []
    for index, raw in enumerate(raw_rules):
        start = lines.get(id(raw), {}).get("", top_lines.get("rules", 1))
        if not isinstance(raw, dict):
            raise err(start, f"rule {index + 1}: expected a mapping")
        rule = _rule(raw, lines.get(id(raw), {}), start, channels, err)
        if any(r.name == rule.name for r in rules):
            raise err(start, f"rule {rule.name!r} is defined twice")
        rules.append(rule)
    return RuleSet(tuple(rules), channels, evaluator, source)


def _evaluator(raw: dict, lines: dict, line: int, err) -> HealthSettings:
    if not isinstance(raw, dict):
        raise err(line, "evaluation: expected a mapping (window, allowed_lag, min_complete, stuck_after, stuck_factor)")
    at = lines.get(id(raw), {})
    unknown = set(raw) - {"window", "allowed_lag", "min_complete", "stuck_after", "stuck_factor"}
    if unknown:
        key = sorted(unknown)[0]
        raise err(at.get(key, line), f"evaluation: unknown key {key!r}")
    defaults = HealthSettings()
    try:
        stuck_after = (
            parse_duration(str(raw["stuck_after"]), "stuck_after") if "stuck_after" in raw else defaults.stuck_after_s
        )
        config = HealthSettings(
            window=int(raw.get("window", defaults.window)),
            allowed_lag=int(raw.get("allowed_lag", defaults.allowed_lag)),
            min_complete=float(raw.get("min_complete", defaults.min_complete)),
            stuck_after_s=stuck_after,
            stuck_factor=float(raw.get("stuck_factor", defaults.stuck_factor)),
        )
    except (TypeError, ValueError, OverflowError, ConfigError) as e:
        raise err(line, f"evaluation: {e}") from e
    if (
        not 2 <= config.window <= MAX_WINDOW
        or config.allowed_lag < 0
        or not 0 <= config.min_complete <= 1
        or not 1 <= config.stuck_factor < math.inf
    ):
        raise err(
            line,
            f"evaluation: 2 <= window <= {MAX_WINDOW}, allowed_lag >= 0, 0 <= min_complete <= 1, stuck_factor >= 1 "
            "(finite numbers)",
        )
    return config


def _rule(raw: dict, at: dict, start: int, channels: dict[str, str], err) -> Rule:
    def line(key):
        return at.get(key, start)

    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise err(start, "rule without a name")
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise err(line("kind"), f"rule {name!r}: kind {kind!r} is not one of {', '.join(KINDS)}")
    required, optional = KINDS[kind]
    for key in raw:
        if key not in COMMON and key not in required and key not in optional:
            raise err(line(key), f"rule {name!r}: {key!r} does not apply to kind {kind}")
    for key in required:
        if key not in raw:
            raise err(start, f"rule {name!r}: kind {kind} needs {key!r}")

    def duration(key, default):
        if key not in raw:
            return default
        try:
            return duration_between(*DURATION_BOUNDS[key])(str(raw[key]), key)
        except ConfigError as e:
            raise err(line(key), f"rule {name!r}: {e}") from e

    def number(key, cast):
        value = raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise err(line(key), f"rule {name!r}: {key} must be a finite number >= 0, got {value!r}")
        return cast(value)

    def names(key) -> list[str]:
        """A string or a list of strings, as a list."""
        value = raw.get(key, [])
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise err(line(key), f"rule {name!r}: {key} must be a name or a list of names, got {value!r}")
        return value

    severity = raw.get("severity", Severity.WARNING)
    if not isinstance(severity, str) or severity not in {s.value for s in Severity}:
        raise err(line("severity"), f"rule {name!r}: severity must be one of {', '.join(Severity)}")
    statuses = names("in")
    if kind == "status":
        try:
            statuses = frozenset(Status[str(s).upper()] for s in statuses)
        except KeyError as e:
            raise err(
                line("in"), f"rule {name!r}: unknown status {e.args[0]} (use {', '.join(s.name for s in Status)})"
            ) from None
        if not statuses:
            raise err(line("in"), f"rule {name!r}: `in` needs at least one status")
    rule_channels = names("channels")
    for channel in rule_channels:
        if channel not in channels:
            raise err(
                line("channels"),
                f"rule {name!r}: channel {channel!r} is not defined "
                f"(LAGMON_CHANNELS or `channels:`; known: {', '.join(channels) or 'none'})",
            )
    labels = raw.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, (str, int, float)) for v in labels.values()):
        raise err(line("labels"), f"rule {name!r}: labels must be a mapping of names to plain values")
    delivery_limit = number("delivery_limit", int)
    if delivery_limit is not None and delivery_limit < 1:
        raise err(line("delivery_limit"), f"rule {name!r}: delivery_limit must be at least 1")
    per_topic = raw.get("per_topic", False)
    if not isinstance(per_topic, bool):
        raise err(line("per_topic"), f"rule {name!r}: per_topic must be true or false")
    return Rule(
        name=name.strip(),
        kind=RuleKind(kind),
        severity=Severity(severity),
        for_s=0.0 if raw.get("for") in (0, "0", "0s", None) else duration("for", 0.0),
        repeat_s=duration("repeat", DEFAULT_REPEAT_S),
        above=number("above", float),
        statuses=statuses if kind == "status" else frozenset(),
        more_than=number("more_than", int),
        below=number("below", int),
        within_s=duration("within", DEFAULT_WITHIN_S),
        delivery_limit=DEFAULT_DELIVERY_LIMIT if delivery_limit is None else delivery_limit,
        per_topic=per_topic,
        groups=_filter(raw.get("groups"), line("groups"), name, err),
        topics=_filter(raw.get("topics"), line("topics"), name, err),
        labels={str(k): str(v) for k, v in labels.items()},
        channels=tuple(rule_channels),
        line=start,
    )


def _filter(raw, line: int, name: str, err) -> Filter:
    if raw is None:
        return Filter()
    if not isinstance(raw, dict) or set(raw) - {"allow", "deny"}:
        raise err(line, f"rule {name!r}: groups/topics take `allow` and `deny` regular expressions")
    patterns = {}
    for key in ("allow", "deny"):
        if raw.get(key):
            try:
                patterns[key] = re.compile(str(raw[key]))
            except re.error as e:
                raise err(line, f"rule {name!r}: {key} {raw[key]!r} is not a regular expression ({e})") from e
    return Filter(**patterns)


# -- loaders that remember where each mapping and key was ---------------------------------


class _LineLoader(yaml.SafeLoader):
    pass


def _load_yaml(text: str, source: str) -> tuple[object, dict[int, dict[str, int]]]:
    lines: dict[int, dict[str, int]] = {}

    def construct_mapping(loader, node, deep=False):
        mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=True)
        at = {"": node.start_mark.line + 1}
        for key_node, _ in node.value:
            key, key_line = str(key_node.value), key_node.start_mark.line + 1
            if key in at:  # YAML would keep the last silently: a rule that is not what it reads as
                raise ConfigError(f"{source} line {key_line}: {key!r} is given twice (first on line {at[key]})")
            at[key] = key_line
        lines[id(mapping)] = at
        return mapping

    loader_cls = type("_Loader", (_LineLoader,), {})
    loader_cls.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    try:
        data = yaml.load(text, Loader=loader_cls)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{source}{where}: not valid YAML ({getattr(e, 'problem', None) or e})") from e
    return data, lines


def _load_toml(text: str, source: str) -> tuple[object, dict[int, dict[str, int]]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: not valid TOML ({e})") from e  # tomllib's message names line and column
    # TOML keeps no positions: find each [[rules]] table and its keys by scanning the text.
    lines: dict[int, dict[str, int]] = {}
    starts = [i + 1 for i, ln in enumerate(text.splitlines()) if ln.strip().startswith("[[rules]]")]
    all_lines = text.splitlines()
    for rule, start in zip(data.get("rules", []) if isinstance(data.get("rules"), list) else [], starts, strict=False):
        at = {"": start}
        for offset, ln in enumerate(all_lines[start:], start + 1):
            if ln.strip().startswith("["):
                break
            key = ln.split("=", 1)[0].strip()
            if key:
                at.setdefault(key, offset)
        lines[id(rule)] = at
    return data, lines
