"""A tiny encoder of Kafka's wire primitives, for building __consumer_offsets records by hand.

Shared by the decoder's benchmark (bench_decode.py, commit_workload.py) and its tests, which import it
from here (pytest.ini puts bench/ on their path): a benchmark imports nothing from tests/.
"""

import struct


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def s16(x):
    return i16(-1) if x is None else i16(len(x.encode())) + x.encode()


def b32(x):
    return i32(-1) if x is None else i32(len(x)) + x


def arr(items):
    return i32(len(items)) + b"".join(items)


def uv(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cs(x):
    return uv(0) if x is None else uv(len(x.encode()) + 1) + x.encode()


def cb(x):
    return uv(0) if x is None else uv(len(x) + 1) + x


def carr(items):
    return uv(0) if items is None else uv(len(items) + 1) + b"".join(items)


def cints(ps):
    return uv(0) if ps is None else uv(len(ps) + 1) + b"".join(i32(p) for p in ps)


def tags(fields=None):
    fields = fields or {}
    return uv(len(fields)) + b"".join(uv(t) + uv(len(d)) + d for t, d in fields.items())
