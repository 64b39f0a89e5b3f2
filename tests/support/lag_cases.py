"""The one table of lag cases: monitor.lag's pure functions and Spark's columns must both answer these.

tests/unit/test_lag.py runs them through monitor.lag; tests/spark/test_lag_definition.py
through spark.transforms.compute_partition_rows. The expected answers are worked out by
hand in each case's `why`, from the definition in monitor/lag.py: the record at committed
offset C was appended when the (running maximum of the) log end went from C to C + 1.
"""

from __future__ import annotations

from dataclasses import dataclass

S = 1000


@dataclass(frozen=True)
class TimeLagCase:
    name: str
    history: tuple[tuple[int, int], ...]  # (log_end, at_ms), oldest first
    committed: int | None
    now: int
    seconds: float | None  # None: no answer (then at_least is False)
    at_least: bool
    why: str


@dataclass(frozen=True)
class LagCase:
    name: str
    committed: int | None
    log_end: int | None
    lag: int | None


STEADY = ((100, 0), (200, 10 * S), (300, 20 * S), (400, 30 * S))

TIME_LAG_CASES = [
    TimeLagCase(
        "between two points",
        STEADY,
        149,
        30 * S,
        25.0,
        False,
        "150 reached halfway from 100 at 0 s to 200 at 10 s: 5 s",
    ),
    TimeLagCase(
        "at a point's log end",
        STEADY,
        200,
        30 * S,
        19.9,
        False,
        "201 reached 1/100 of the way from 200 at 10 s to 300 at 20 s: 10.1 s (C, 200, would say 10 s)",
    ),
    TimeLagCase(
        "at the first point's log end",
        STEADY,
        100,
        30 * S,
        29.9,
        False,
        "101 reached 1/100 of the way from 100 at 0 s to 200 at 10 s: 0.1 s",
    ),
    TimeLagCase("at the newest log end", STEADY, 400, 30 * S, 0.0, False, "caught up"),
    TimeLagCase(
        "past the newest log end",
        STEADY,
        450,
        30 * S,
        0.0,
        False,
        "a commit past the log end sampled before it: caught up, not negative",
    ),
    TimeLagCase(
        "now after the newest point",
        STEADY[:2],
        150,
        60 * S,
        54.9,
        False,
        "151 reached at 5.1 s; no log end sampled at now itself",
    ),
    TimeLagCase(
        "plateau before the record (#121)",
        ((400, 0), (500, 10 * S), (500, 20 * S), (500, 30 * S)),
        499,
        30 * S,
        20.0,
        False,
        "500 reached at 10 s; the flat segment after it is not divided by",
    ),
    TimeLagCase(
        "plateau at the committed offset",
        ((100, 0), (100, 10 * S), (130, 20 * S), (160, 30 * S)),
        100,
        30 * S,
        19.667,
        False,
        "101 reached 1/30 of the way from 100 at 10 s to 130 at 20 s",
    ),
    TimeLagCase(
        "flat history behind the record (#121)",
        ((500, 0), (500, 10 * S), (500, 20 * S)),
        499,
        20 * S,
        20.0,
        True,
        "no point at or below 499: at least since the oldest point",
    ),
    TimeLagCase(
        "two shards sampled the log end in one millisecond",
        ((100, 0), (200, 10 * S), (200, 10 * S), (300, 20 * S)),
        149,
        20 * S,
        15.0,
        False,
        "150 reached at 5 s, as with one point at 10 s",
    ),
    TimeLagCase(
        "broker restart, a lower log end now (#138)",
        ((100, 0), (200, 10 * S), (0, 20 * S)),
        149,
        20 * S,
        15.0,
        False,
        "the running maximum stays 200: 150 reached at 5 s",
    ),
    TimeLagCase(
        "broker restart, then growth",
        ((100, 0), (200, 10 * S), (50, 20 * S), (300, 30 * S)),
        250,
        30 * S,
        4.9,
        False,
        "running maximum 200 at 20 s, 300 at 30 s: 251 reached at 25.1 s (not from 50 at 20 s)",
    ),
    TimeLagCase(
        "older than the whole history (#496)",
        ((1000, 0), (1200, 10 * S), (1400, 20 * S)),
        900,
        20 * S,
        20.0,
        True,
        "a lower bound: the age of the oldest point",
    ),
    TimeLagCase(
        "older than a single point",
        ((1000, 0),),
        900,
        10 * S,
        10.0,
        True,
        "a lower bound: the age of the only point; no log end sampled at now itself",
    ),
    TimeLagCase(
        "a single fresh point", ((20, 10 * S),), 5, 10 * S, None, False, "a bound of 0 s says nothing: no answer"
    ),
    TimeLagCase("a single point, caught up", ((20, 10 * S),), 20, 10 * S, 0.0, False, "caught up"),
    TimeLagCase("uncommitted", STEADY, None, 30 * S, None, False, "no position, no lag"),
    TimeLagCase("no offset (-1)", STEADY, -1, 30 * S, None, False, "Kafka's 'no committed offset'"),
    TimeLagCase("no history", (), 5, 30 * S, None, False, "nothing to interpolate over"),
    TimeLagCase(
        "newest point stamped after now (#138)",
        ((100, 0), (200, 10 * S)),
        150,
        1 * S,
        0.0,
        False,
        "151 reached at 5.1 s, after now (another host's clock): 0, not negative",
    ),
]

LAG_CASES = [
    LagCase("behind", 150, 200, 50),
    LagCase("caught up", 200, 200, 0),
    LagCase("committed past the log end", 210, 200, 0),
    LagCase("at offset 0", 0, 200, 200),
    LagCase("uncommitted", None, 200, None),
    LagCase("no offset (-1)", -1, 200, None),
    LagCase("no log end", 150, None, None),
    LagCase("neither", None, None, None),
]
