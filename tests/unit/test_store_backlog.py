"""The cycles the store could not take (collector.StoreBacklog): kept in order, bounded, written once it is back."""

from __future__ import annotations

from factories import make_snapshot

from monitor.collector import StoreBacklog
from monitor.models import StoreUnavailable
from monitor.store.writer import CycleWrite


class Store:
    """Takes cycles while up; while down, says so as the real one does."""

    def __init__(self):
        self.down = False
        self.written: list[CycleWrite] = []

    def write_cycle(self, cycle: CycleWrite) -> int:
        if self.down:
            raise StoreUnavailable("cannot store the cycle: database is locked")
        self.written.append(cycle)
        return len(self.written)


def cycle(i: int) -> CycleWrite:
    return CycleWrite("c1", 1000 * i, 10, make_snapshot(1000 * i))


def test_kept_cycles_are_written_in_order_after_a_marker_at_the_outages_start():
    store, backlog = Store(), StoreBacklog(1 << 20)
    assert backlog.write(store, cycle(1)) == (1, None)
    store.down = True
    for i in (2, 3, 4):
        assert backlog.write(store, cycle(i)) == (None, "cannot store the cycle: database is locked")
    store.down = False
    assert backlog.write(store, cycle(5)) == (6, None)
    marker = store.written[1]
    assert [c.taken_at for c in store.written] == [1000, 2000, 2000, 3000, 4000, 5000]
    assert marker.snapshot is None and marker.errors[0].startswith("the store was unavailable for ")
    assert marker.errors[0].endswith(
        "(cannot store the cycle: database is locked): 4 cycles kept and written afterwards"
    )
    assert not backlog.cycles and backlog.bytes == 0


def test_past_its_limit_the_oldest_kept_cycles_go():
    store = Store()
    backlog = StoreBacklog(2 * cycle(1).estimate_bytes())
    store.down = True
    for i in range(1, 6):
        backlog.write(store, cycle(i))
    assert [c.taken_at for c in backlog.cycles] == [4000, 5000]
    store.down = False
    backlog.flush(store)
    assert [c.taken_at for c in store.written] == [4000, 4000, 5000]
    assert "2 cycles kept, 3 older ones dropped" in store.written[0].errors[0]
