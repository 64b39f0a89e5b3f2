"""monitor.tail_sessions: the loop both topic tails run: each failure said once, a refused topic ends it."""

from __future__ import annotations

import logging
import threading

from monitor.models import KafkaUnavailable, NotAuthorized
from monitor.tail_sessions import FailureLog, run_sessions


class Reader:
    closed = 0

    def close(self) -> None:
        Reader.closed += 1


def test_a_failing_session_is_said_once_and_every_reader_is_closed(caplog, monkeypatch):
    monkeypatch.setattr("monitor.tail_sessions.BACKOFF_FIRST_S", 0.0)
    stop, sessions = threading.Event(), []

    def session(reader, stop):
        sessions.append(reader)
        if len(sessions) == 4:
            stop.set()
        raise KafkaUnavailable("broker down")

    Reader.closed = 0
    run_sessions("t", Reader, session, stop, FailureLog(logging.getLogger("lagmon.test")), refused=lambda e: True)
    assert len(sessions) == 4 and Reader.closed == 4
    assert [r.getMessage() for r in caplog.records] == ["t: broker down (retrying)"]


def test_a_refused_topic_ends_the_sessions_when_the_tail_says_so():
    asked = []

    def session(reader, stop):
        raise NotAuthorized("no Read on the topic")

    def refused(e):
        asked.append(str(e))
        return True

    run_sessions("t", Reader, session, threading.Event(), FailureLog(logging.getLogger("t")), refused=refused)
    assert asked == ["no Read on the topic"]  # one session, then it gave up


def test_a_session_says_how_long_to_wait_before_the_next():
    stop, waits = threading.Event(), []
    real_wait = stop.wait

    def session(reader, stop):
        return 0.01

    def wait(seconds):
        waits.append(seconds)
        if len(waits) == 3:
            stop.set()
        return real_wait(0)

    stop.wait = wait
    run_sessions("t", Reader, session, stop, FailureLog(logging.getLogger("t")), refused=lambda e: True)
    assert waits == [0.01, 0.01, 0.01]


def test_a_failed_session_is_known_until_the_tail_reads_again():
    failures = FailureLog(logging.getLogger("t"))
    failures("skipped a record")  # not a session's end
    assert not failures.session_failed
    failures.session("t: broker down (retrying)")
    assert failures.session_failed
    failures.healthy()
    assert not failures.session_failed
