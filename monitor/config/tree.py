"""How a setting is declared, and the one loader every area shares.

A field declared with `setting()` carries its variable, its default as the
reference page words it, a one-line meaning and its parser, so what the code
reads, what it falls back to and what docs/configuration.md lists come from one
place (tests/unit/test_config_docs.py holds the page to it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any, ClassVar, Self

SETTING = "lagmon.setting"
Parser = Callable[[str, str], Any]


@dataclass(frozen=True)
class Setting:
    env: str  # the variable, or a family's pattern (LAGMON_KAFKA_*)
    default_text: str  # the default as docs/configuration.md says it
    meaning: str
    parse: Parser | None = None  # (text, variable) -> value; None keeps the text
    blank_is_unset: bool = False  # VAR= means the default, not an empty value
    family: Callable[[Mapping[str, str]], Any] | None = None  # reads every variable of a family at once
    read_by: str | None = None  # not read by Python but by this file of the repository


def setting(
    env: str,
    *,
    default: Any,
    default_text: str,
    meaning: str,
    parse: Parser | None = None,
    blank_is_unset: bool = False,
    secret: bool = False,
    read_by: str | None = None,
) -> Any:
    """A dataclass field read from `env`; `default=dict` gives each instance its own empty dict."""
    meta = {SETTING: Setting(env, default_text, meaning, parse, blank_is_unset, read_by=read_by)}
    if default is dict:
        return field(default_factory=dict, repr=not secret, metadata=meta)
    return field(default=default, repr=not secret, metadata=meta)


def family(pattern: str, *, default_text: str, meaning: str, read: Callable[[Mapping[str, str]], Any]) -> Any:
    """A field filled from every variable matching `pattern` (secret: never in a repr)."""
    meta = {SETTING: Setting(pattern, default_text, meaning, family=read)}
    return field(default_factory=dict, repr=False, metadata=meta)


def declared(area: type) -> list[tuple[Field, Setting]]:
    """The fields of `area` with their settings, in declaration order."""
    return [(f, f.metadata[SETTING]) for f in fields(area) if SETTING in f.metadata]


class Area:
    """Base of the frozen dataclasses of the tree: `from_env` reads exactly the declared variables."""

    title: ClassVar[str]  # its section of docs/configuration.md

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The area from `env` (default os.environ); raises ConfigError naming the bad variable."""
        env = os.environ if env is None else env
        values = {}
        for f, s in declared(cls):
            if s.read_by:
                continue
            if s.family:
                values[f.name] = s.family(env)
                continue
            text = env.get(s.env)
            if text is None or (s.blank_is_unset and not text):
                continue
            values[f.name] = s.parse(text, s.env) if s.parse else text
        return cls(**values)

    @classmethod
    def one_from_env(cls, name: str, env: Mapping[str, str] | None = None) -> Any:
        """Field `name` alone from `env`: a malformed value of another field of the area is not its problem."""
        env = os.environ if env is None else env
        [variable] = [s.env for f, s in declared(cls) if f.name == name]
        return getattr(cls.from_env({variable: env[variable]} if variable in env else {}), name)
