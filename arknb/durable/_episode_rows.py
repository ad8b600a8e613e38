"""The ``arknb_episodes`` table of a durable store's database: rows that
:class:`~arknb.memory.EpisodicMemory` keeps next to the sessions.

The store knows nothing of episodes: a row is an id and a JSON document, read back in
the order the rows were added (the memory validates the documents); the table is part of
the layout (``_database.py`` step 3, ``PG_LAYOUT_STEPS`` step 2). Appends are
serialised (SQLite's write lock; a table lock on PostgreSQL), so positions become
visible in order and a reader that read ``n`` rows reads only what came after.
"""

from __future__ import annotations

from typing import Any

from arknb.domain import ErrorCode, invalid_argument

from ._sql import Dialect

__all__ = ["EpisodeRows"]


def add_episode(conn: Any, d: Dialect, episode_id: str, document: str) -> None:
    if d.name == "PostgreSQL":
        # Self-conflicting, so appends commit in position order; readers are not blocked.
        conn.execute("LOCK TABLE arknb_episodes IN SHARE ROW EXCLUSIVE MODE")
    conn.execute(d.q("INSERT INTO arknb_episodes (episode_id, document) VALUES (?, ?) "
                     "ON CONFLICT (episode_id) DO NOTHING"), (episode_id, document))


def read_episodes(conn: Any, d: Dialect, start: int) -> list[tuple[int, str]]:
    return [(int(position), document) for position, document in conn.execute(
        d.q("SELECT position, document FROM arknb_episodes ORDER BY position LIMIT ? OFFSET ?"),
        (2**62, start)).fetchall()]


class EpisodeRows:
    """A durable store's episode rows (``store.episode_rows()``)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    async def add(self, episode_id: str, document: str) -> None:
        """Keep one row (a second add of the same id changes nothing) before returning."""
        if not isinstance(episode_id, str) or not episode_id:
            raise invalid_argument(f"an episode row needs a non-empty id, got {episode_id!r}")
        await self._store._call(ErrorCode.STATE_SAVE_FAILED, "could not add an episode",
                                self._store._write_txn, add_episode, episode_id, document)

    async def documents(self, start: int = 0) -> list[tuple[int, str]]:
        """``(position, document)`` of the rows from the ``start``-th on (0: the first)."""
        found = await self._store._call(ErrorCode.STATE_LOAD_FAILED, "could not read the episodes",
                                        self._store._read, read_episodes, max(0, int(start)))
        return found or []

    def __repr__(self) -> str:
        return f"EpisodeRows({self._store!r})"
