"""What this process knows the rows of each durable session hold.

A store instance that saved or loaded a session remembers the items it wrote or read
(:class:`Written`), so its next save appends what is new (a pointer comparison per item)
and a load of a session that did not change since needs no rows at all. The knowledge is
per database (a store's ``location``), not per store instance: a second runtime, a
re-run restore cell or a fresh ``SQLiteStore`` on the same file in the same process
restores a 1,000-turn session by reading one row instead of 3,000.

An entry is used only while the session row still says what it said: the same
incarnation (a random token the row got when it was created, so a deleted and re-created
session never matches), revision (bumped by every save, compare-and-swap), lengths and
header text. Rows are append-only within an incarnation, so those four name one content.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["KNOWN_ROWS", "KnownRows", "Written", "new_incarnation"]


@dataclass(slots=True, frozen=True)
class Written:
    """What a database holds for one session as far as this process knows: the sequences
    saved or loaded (in ``SEQUENCES`` order), the session's revision, the row lengths, the
    header text read or written (a stored header equal to it needs no check) and the
    session row's incarnation."""

    sequences: tuple[tuple[Any, ...], ...]
    revision: int
    lengths: tuple[int, ...]
    header: str | None = None
    incarnation: str | None = None

    def describes(self, revision: object, lengths: tuple[object, ...], header: object, incarnation: object) -> bool:
        """True if a session row with these columns holds exactly :attr:`sequences`."""
        return (incarnation is not None and incarnation == self.incarnation and revision == self.revision
                and lengths == self.lengths and header == self.header)


def new_incarnation() -> str:
    """A token for a session row created now."""
    return secrets.token_hex(16)


class KnownRows:
    """``(location, session_id) -> Written``, least recently used first out once the
    entries hold more than ``max_items`` items in all (an evicted session's next save
    rewrites its rows instead of appending; nothing else changes). Thread-safe: each
    store writes from its own worker thread."""

    def __init__(self, max_items: int = 2_000_000) -> None:
        self._entries: OrderedDict[tuple[Any, str], Written] = OrderedDict()
        self._items = 0
        self._max = max_items
        self._lock = threading.Lock()

    def view(self, location: Any) -> LocationRows:
        """The entries of one database, used like a ``dict`` keyed by session id."""
        return LocationRows(self, location)

    def get(self, key: tuple[Any, str]) -> Written | None:
        with self._lock:
            written = self._entries.get(key)
            if written is not None:
                self._entries.move_to_end(key)
            return written

    def put(self, key: tuple[Any, str], written: Written) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._items -= sum(old.lengths)
            self._entries[key] = written
            self._items += sum(written.lengths)
            while self._items > self._max and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self._items -= sum(dropped.lengths)

    def pop(self, key: tuple[Any, str]) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._items -= sum(old.lengths)

    def clear(self) -> None:
        """Forget everything (tests; a benchmark's cold restore)."""
        with self._lock:
            self._entries.clear()
            self._items = 0

    def __len__(self) -> int:
        return len(self._entries)


class LocationRows:
    """One database's entries of a :class:`KnownRows`."""

    __slots__ = ("_known", "_location")

    def __init__(self, known: KnownRows, location: Any) -> None:
        self._known = known
        self._location = location

    def get(self, session_id: str) -> Written | None:
        return self._known.get((self._location, session_id))

    def __setitem__(self, session_id: str, written: Written) -> None:
        self._known.put((self._location, session_id), written)

    def pop(self, session_id: str, default: None = None) -> None:
        self._known.pop((self._location, session_id))


KNOWN_ROWS = KnownRows()
"""The process's knowledge of every durable store's rows."""
