"""Collector shards: which process of `n` owns a consumer group (pure).

Several collectors can split one cluster's groups (`--shard i/n`, LAGMON_SHARD):
a group belongs to shard i when crc32(utf-8 group id) mod n == i - 1. crc32 is
the same in every process and every Python version (unlike `hash()`, which is
salted per process), so every group has exactly one owner and each shard
agrees with every other which one.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from monitor.models import ConfigError

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`; Shard(1, 1), the default, owns every group."""

    index: int = 1
    count: int = 1

    def owns(self, group_id: str) -> bool:
        return self.count == 1 or compute_shard_index(group_id, self.count) == self.index

    @property
    def scope(self) -> str:
        """The topic field of this shard's cluster-wide alerts (collector health): "shard 2/3", '' unsharded."""
        return f"shard {self}" if self.sharded else ""

    def owns_alert(self, group_id: str, topic: str) -> bool:
        """A group's alert belongs to the group's shard; a cluster-wide one to the shard named in its topic."""
        return self.owns(group_id) if group_id else topic == self.scope

    @property
    def label(self) -> str:
        """How the shard is stored and shown: "2/3"."""
        return f"{self.index}/{self.count}"

    @property
    def sharded(self) -> bool:
        return self.count > 1

    @property
    def leads(self) -> bool:
        """Shard 1 also does the cluster-wide chores (retention), so they run once."""
        return self.index == 1

    def __str__(self) -> str:
        return self.label


UNSHARDED = Shard()


def compute_shard_index(group_id: str, count: int) -> int:
    """The 1-based shard of `count` that owns `group_id`: crc32 of its UTF-8 bytes, mod count."""
    return zlib.crc32(group_id.encode("utf-8")) % count + 1


def compute_other_layouts(shard: Shard, labels) -> list[str]:
    """Shard labels ("1/3") of a different n than `shard`'s: collectors that split the groups otherwise."""
    return sorted(label for label in labels if label.partition("/")[2] != str(shard.count))


def parse_shard(text: str | None, name: str = "LAGMON_SHARD") -> Shard:
    """ "2/3" -> Shard(2, 3); empty or None -> unsharded; anything else is one ConfigError."""
    if text is None or not str(text).strip():
        return UNSHARDED
    match = _SPEC.match(str(text))
    if not match:
        raise ConfigError(f"{name}: {text!r} is not a shard; use i/n with 1 <= i <= n, e.g. 2/3")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"{name}: {text!r} is not a shard; use i/n with 1 <= i <= n, e.g. 2/3")
    return Shard(index, count)
