"""The names lagmon keeps for ids it does not choose (no I/O; docs/architecture.md, "Hostile names").

Kafka accepts any string as a group id: a NUL, 30,000 characters. Stores cannot key
on all of them (PostgreSQL refuses a NUL in text, and an index entry over ~2.7 kB),
and no person reads one. So past the Kafka edge (the sampler's listing and the
offsets-topic decoder) a group is known by `stored_name`: the id itself when it is
plain, else a readable head and a digest of the whole id. Every process computes
the same name, so shards, alerts and the store agree. The whole id is remembered
(`full_id`, a bounded memo) and kept in the store (`consumer_groups.full_id`).
Text that is never a key (client ids, hosts, notes) only loses its NULs
(`plain_text`). Where a name meets a terminal or a chat, `visible` shows what
would otherwise act: escape sequences, right-to-left overrides.
"""

from __future__ import annotations

import hashlib
import re

MAX_CHARS = 200  # a longer id is shown by its head: 200 characters read on one line
_HEAD_CHARS = 80
_STAND_IN = "…#"  # head…#digest: what marks a stand-in


_FULL_IDS: dict[str, str] = {}  # stand-in -> the id it stands for, as seen by this process (bounded)
_FULL_IDS_MAX = 1024


def stored_name(name: str) -> str:
    """`name`, or for an id with a NUL or over MAX_CHARS characters: its head, "…#" and 16 hex of its sha256."""
    if len(name) <= MAX_CHARS and "\x00" not in name:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    stand_in = f"{plain_text(name[:_HEAD_CHARS])}{_STAND_IN}{digest}"
    if len(_FULL_IDS) < _FULL_IDS_MAX:
        _FULL_IDS[stand_in] = name
    return stand_in


def full_id(name: str) -> str | None:
    """The id a stand-in was made from in this process (the sampler's or the offsets-topic tail's), if any."""
    return _FULL_IDS.get(name)


def is_cut_at_nul(listed: str, stand_in: str) -> bool:
    """Whether `listed` is what librdkafka lists for the id behind `stand_in`: a C string ends at a NUL."""
    return len(listed) < _HEAD_CHARS and stand_in.startswith(f"{listed}\ufffd") and is_stand_in(stand_in)


def is_stand_in(name: str) -> bool:
    """Whether `name` came from `stored_name` for a longer or NUL-bearing id (so it is not the id Kafka knows)."""
    return len(name) > 18 and name[-18:-16] == _STAND_IN


def plain_text(text: str | None) -> str | None:
    """`text` with each NUL as U+FFFD, the replacement character, so that any store takes it."""
    return text if text is None or "\x00" not in text else text.replace("\x00", "\ufffd")


# What a name can carry that a terminal or a chat would obey instead of show: control characters (escape
# sequences, carriage returns) and invisible format characters (right-to-left overrides, zero widths).
_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def visible(text: str) -> str:
    """`text` shown faithfully: each control or format character as its \\u escape (a NUL as \\u0000)."""
    return _UNSHOWABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
