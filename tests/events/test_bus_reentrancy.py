"""EventBus subscribe/unsubscribe stay right when an unsubscribe runs in the middle of
another change (a garbage-collected widget's finalizer, run by an allocation inside
subscribe): the removed listener never comes back (issue 25 item 7)."""

from arknb.events import EventBus


def test_an_unsubscribe_during_a_subscribe_is_not_undone():
    bus = EventBus()
    first = bus.subscribe("*", lambda e: None)
    real = bus._by_type

    class Meddling(dict):
        """Runs ``first`` (as a finalizer would) the moment subscribe reads the listeners."""
        armed = True

        def get(self, key, default=None):
            value = super().get(key, default)
            if self.armed:
                self.armed = False
                first()
            return value

    bus._by_type = Meddling(real)
    bus.subscribe("*", lambda e: None)
    assert len(bus._by_type["*"]) == 1  # only the new listener: the unsubscribed one stays gone
