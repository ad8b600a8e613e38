from arknb.widgets._coalescer import Coalescer

from .conftest import FakeTimers


def make(timers: FakeTimers, interval: float = 0.033):
    flushes: list[float] = []
    c = Coalescer(lambda: flushes.append(timers.now), interval=interval, clock=timers.clock,
                  call_later=timers.call_later)
    return c, flushes


def test_deltas_flush_once_per_interval(timers):
    c, flushes = make(timers)
    for _ in range(10_000):  # 10,000 chunks over one second
        c.delta()
        timers.advance(0.0001)
    timers.advance(0.1)
    assert 25 <= len(flushes) <= 32
    gaps = [b - a for a, b in zip(flushes, flushes[1:])]
    assert min(gaps) >= 0.033 - 1e-9


def test_structural_flushes_at_once_when_idle(timers):
    c, flushes = make(timers)
    timers.advance(1.0)
    c.structural()
    assert flushes == [1.0]


def test_structural_right_after_a_flush_waits_for_the_interval(timers):
    c, flushes = make(timers)
    c.structural()
    timers.advance(0.010)
    c.structural()
    c.structural()
    assert flushes == [0.0]
    timers.advance(0.030)
    assert flushes == [0.0, 0.033]


def test_structural_pulls_a_pending_delta_flush_forward(timers):
    c, flushes = make(timers)
    timers.advance(1.0)
    c.delta()              # would flush at 1.033
    timers.advance(0.005)
    c.structural()         # idle long enough: flush now, timer cancelled
    assert flushes == [1.005]
    timers.advance(0.1)
    assert flushes == [1.005]
    assert timers.pending == 0


def test_without_a_loop_deltas_flush_on_the_leading_edge():
    now = [0.0]
    flushes = []
    c = Coalescer(lambda: flushes.append(now[0]), clock=lambda: now[0], call_later=lambda d, cb: None)
    for i in range(100):
        now[0] = i * 0.001
        c.delta()
    assert len(flushes) == 4  # 0.000, 0.033, 0.066, 0.099


def test_without_a_loop_a_delta_asked_for_by_the_flush_waits_for_the_next_call():
    """A timeline flushing while a model streams asks for the next tick from inside its
    flush; with no loop and interval 0 that flushed again inside the flush, recursing
    until Python's limit (a RecursionError swallowed by the event bus, or raised from a
    finalizer)."""
    flushes = []

    def flush():
        flushes.append(1)
        c.delta()  # the next tick of the stream

    c = Coalescer(flush, interval=0, call_later=lambda d, cb: None)
    c.delta()
    assert flushes == [1]
    c.delta()  # the next event flushes what is pending
    assert flushes == [1, 1]
