"""Does a class or object fit a typing.Protocol? The build has no type checker, so tests ask this.

runtime_checkable's isinstance only sees that the names exist. This also compares each method's
parameters: the implementation must accept every call the protocol allows (same names in the same
order, a default wherever the protocol has one; anything extra needs a default).
"""

from __future__ import annotations

import inspect
from typing import Protocol


def protocol_members(proto: type) -> tuple[set[str], set[str]]:
    """(methods, data attributes) the protocol names, its base protocols' included."""
    methods, data = set(), set()
    for base in proto.__mro__:
        if base in (object, Protocol) or Protocol not in base.__mro__:
            continue
        data.update(getattr(base, "__annotations__", {}))
        methods.update(n for n, v in vars(base).items() if not n.startswith("_") and inspect.isfunction(v))
    return methods, data - methods


def misfits(impl, proto: type) -> list[str]:
    """What keeps `impl` (a class, or an object: then its data attributes are checked too) from fitting `proto`."""
    cls = impl if isinstance(impl, type) else type(impl)
    methods, data = protocol_members(proto)
    out = [f"no attribute {name}" for name in sorted(data) if not isinstance(impl, type) and not hasattr(impl, name)]
    for name in sorted(methods):
        have = getattr(cls, name, None)
        if not callable(have):
            out.append(f"no method {name}")
            continue
        out += [f"{name}: {problem}" for problem in _signature_misfits(getattr(proto, name), have)]
    return out


def _signature_misfits(wanted, have) -> list[str]:
    want = list(inspect.signature(wanted).parameters.values())[1:]  # without self
    got = list(inspect.signature(have).parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in got):
        return []
    problems = []
    for i, w in enumerate(want):
        if i >= len(got) or got[i].name != w.name:
            problems.append(f"parameter {i + 1} should be {w.name!r}")
        elif w.default is not w.empty and got[i].default is got[i].empty:
            problems.append(f"{w.name!r} needs a default")
    problems += [f"extra {g.name!r} needs a default" for g in got[len(want) :] if g.default is g.empty]
    return problems
