"""Pure decoder of `__share_group_state`, the share coordinator's topic (KIP-932).

Its own topic with its own key types: 0 = ShareSnapshot (a share partition's whole
state), 1 = ShareUpdate (a change on top of it); the key is int16 type + group +
topic id + partition, not flexible; the value is int16 version + a flexible body.
Same reader and rules as `__consumer_offsets` (decoder.py): DecodeError and
nothing else, unknown types and versions Skipped, unknown tags skipped. No I/O.
"""

from __future__ import annotations

from monitor.models import DecodeError
from monitor.names import stored_name
from monitor.offsets_topic.decoder import (
    Reader,
    array_of,
    checked_input,
    flexible_body,
    flexible_struct,
    frozen,
    read_value,
)
from monitor.offsets_topic.records import ShareSnapshot, ShareStateRecord, ShareUpdate, Skipped, StateBatch

SHARE_SNAPSHOT, SHARE_UPDATE = 0, 1
SHARE_STATE_KEY = ("group", "topic_id", "partition")

_state_batch = flexible_struct(
    lambda r: frozen(
        StateBatch,
        {"first_offset": r.int64(), "last_offset": r.int64(), "delivery_state": r.int8(), "delivery_count": r.int16()},
    )
)
# KIP-1226 (Kafka 4.2+); Kafka's default -1 = not known, what an older broker's records mean too
_DELIVERY_COMPLETE = {0: ("delivery_complete_count", Reader.int32, -1)}

# key type -> (class, value body, highest known value version, first flexible version)
SHARE_STATE_TYPES = {
    SHARE_SNAPSHOT: (
        ShareSnapshot,
        flexible_body(
            _DELIVERY_COMPLETE,
            snapshot_epoch=Reader.int32,
            state_epoch=Reader.int32,
            leader_epoch=Reader.int32,
            start_offset=Reader.int64,
            create_timestamp=Reader.int64,
            write_timestamp=Reader.int64,
            state_batches=array_of(_state_batch),
        ),
        0,
        0,
    ),
    SHARE_UPDATE: (
        ShareUpdate,
        flexible_body(
            _DELIVERY_COMPLETE,
            snapshot_epoch=Reader.int32,
            leader_epoch=Reader.int32,
            start_offset=Reader.int64,
            state_batches=array_of(_state_batch),
        ),
        0,
        0,
    ),
}


def _decode_checked(rtype: int, key: bytes, value: bytes | None) -> ShareStateRecord:
    cls, body, highest, flexible_from = SHARE_STATE_TYPES[rtype]
    r = Reader(key, pos=2)
    state = {"group": stored_name(r.string()), "topic_id": r.uuid(), "partition": r.int32()}  # as the sampler names it
    r.done("the key")
    state = read_value(rtype, cls, state, value, body, highest, flexible_from)
    # a dict holds every field: the key's, the body's (tagged ones too), value_version and tombstone
    return frozen(cls, state) if isinstance(state, dict) else state


def decode_share_state(key: bytes, value: bytes | None) -> ShareStateRecord:
    """Decode one `__share_group_state` record; raises DecodeError and nothing else."""
    key, value, rtype = checked_input(key, value)
    if rtype in SHARE_STATE_TYPES:
        try:
            return _decode_checked(rtype, key, value)
        except DecodeError as e:
            raise DecodeError(f"share-state record type {rtype}: {e}") from None
    if rtype < 0:
        raise DecodeError(f"unknown record type {rtype}")
    return Skipped(rtype, "share-state record type unknown to Kafka 4.3")
