"""Join a classic group of any protocol type over Kafka's wire protocol.

Kafka Connect workers, Schema Registry and others form classic groups whose
protocol type is not "consumer". Running one of them needs jars the project does
not ship, so the tests speak the three requests such a member sends
(FindCoordinator, JoinGroup, SyncGroup) to the real broker themselves.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time

from kafka_wire import b32, i8, i16, i32, s16

FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, LEAVE_GROUP = 10, 11, 14, 13
MEMBER_ID_REQUIRED = 79


class Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        self.pos += n
        return self.data[self.pos - n : self.pos].decode()


class Connection:
    _ids = itertools.count(1)

    def __init__(self, host: str, port: int):
        self.sock = socket.create_connection((host, port), timeout=30)

    def call(self, api_key: int, version: int, body: bytes) -> Reader:
        correlation = next(self._ids)
        request = i16(api_key) + i16(version) + i32(correlation) + s16("lagmon-test") + body
        self.sock.sendall(i32(len(request)) + request)
        size = struct.unpack(">i", self._read(4))[0]
        reply = Reader(self._read(size))
        assert reply.take(">i") == correlation
        return reply

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            out += chunk
        return out

    def close(self) -> None:
        self.sock.close()


SETTLING = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def find_coordinator(bootstrap: str, group: str) -> Connection:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    seed = Connection(host, int(port))
    reply = seed.call(FIND_COORDINATOR, 1, s16(group) + i8(0))
    seed.close()
    reply.take(">i")
    error = reply.take(">h")
    if error:
        raise Settling(error)
    reply.string()
    reply.take(">i")
    return Connection(reply.string(), reply.take(">i"))


class Settling(Exception):
    """The cluster is still creating or moving the group's coordinator: ask again."""


def join_group(bootstrap: str, group: str, protocol_type: str, *, session_ms: int = 30_000) -> tuple[Connection, str]:
    """Become the only member (and leader) of `group`; returns the coordinator connection and member id."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return _join(find_coordinator(bootstrap, group), group, protocol_type, session_ms)
        except Settling as e:
            assert e.args[0] in SETTLING and time.monotonic() < deadline, f"Kafka error {e.args[0]}"
            time.sleep(0.2)


def _join(coordinator: Connection, group: str, protocol_type: str, session_ms: int) -> tuple[Connection, str]:
    member_id = ""
    while True:
        body = (
            s16(group)
            + i32(session_ms)
            + i32(session_ms)
            + s16(member_id)
            + s16(None)
            + s16(protocol_type)
            + i32(1)
            + s16("default")
            + b32(b"\x00\x00")
        )
        reply = coordinator.call(JOIN_GROUP, 5, body)
        reply.take(">i")
        error = reply.take(">h")
        generation = reply.take(">i")
        reply.string()
        reply.string()
        member_id = reply.string()
        if error != MEMBER_ID_REQUIRED:
            break
    if error:
        coordinator.close()
        raise Settling(error)
    body = s16(group) + i32(generation) + s16(member_id) + s16(None) + i32(1) + s16(member_id) + b32(b"\x00\x00")
    reply = coordinator.call(SYNC_GROUP, 3, body)
    reply.take(">i")
    assert reply.take(">h") == 0, "SyncGroup failed"
    return coordinator, member_id


def leave_group(coordinator: Connection, group: str, member_id: str) -> None:
    coordinator.call(LEAVE_GROUP, 3, s16(group) + i32(1) + s16(member_id) + s16(None))
    coordinator.close()
