"""Episodes and where they are kept: a JSONL file, a SQLite database, or memory.

An :class:`Episode` is what :class:`~arknb.memory.EpisodicMemory` records at the end of a
completed run (DESIGN §14): session, run, summary, time. A store keeps them in the order
they were added and hands back those from a position on, so a memory that already read
the first ``n`` reads only what was added since, also by another process.

* :class:`JsonlEpisodeStore`: one JSON line per episode, appended and fsynced; a line
  torn by a crash mid-write is skipped when read (the episodes before it are whole).
* :class:`SQLiteEpisodeStore`: one table in a SQLite file (WAL, ``synchronous=FULL``),
  for many sessions and processes sharing one memory.
* :class:`MemoryEpisodeStore`: in this process only (tests, throwaway notebooks).
* :class:`DurableEpisodeStore`: the ``arknb_episodes`` rows of a durable store's database
  (``ark.SQLiteStore`` or ``ark.PostgresStore``), next to its sessions.

Any object with the two async methods of :class:`EpisodeStore` works as well.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..domain import ArkError, ErrorCode, ErrorLayer, Retryability
from ..domain.threads import run_blocking

__all__ = ["DurableEpisodeStore", "Episode", "EpisodeStore", "JsonlEpisodeStore", "MemoryEpisodeStore",
           "SQLiteEpisodeStore"]


class Episode(BaseModel):
    """One completed run, as remembered.

    Attributes:
        episode_id: unique id.
        session_id: the session the run belonged to.
        run_id: the run.
        summary: what is searched and shown (by default the input and the final answer).
        created_at: when the run completed (seconds since the epoch).
        input: the run's user input, as text.
        answer: the run's final answer, as text.
        embedding: ``embed(summary)`` when the memory has an ``embed`` function.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    episode_id: str = Field(min_length=1)
    session_id: str
    run_id: str
    summary: str
    created_at: float
    input: str = ""
    answer: str = ""
    embedding: tuple[float, ...] | None = None


@runtime_checkable
class EpisodeStore(Protocol):
    """Where episodes are kept, in the order they were added."""

    async def add(self, episode: Episode) -> None:
        """Keep one episode durably before returning."""

    async def episodes(self, start: int = 0) -> list[Episode]:
        """The episodes from position ``start`` on (0 is the first ever added)."""


class MemoryEpisodeStore:
    """Episodes in a list, for this process only."""

    def __init__(self) -> None:
        self._episodes: list[Episode] = []

    async def add(self, episode: Episode) -> None:
        self._episodes.append(episode)

    async def episodes(self, start: int = 0) -> list[Episode]:
        return self._episodes[start:]

    def __repr__(self) -> str:
        return f"MemoryEpisodeStore({len(self._episodes)} episodes)"


class JsonlEpisodeStore:
    """Episodes as JSON lines in one file (created with its folder on the first add).

    Example:
        >>> store = JsonlEpisodeStore(".arknb/memory/episodes.jsonl")   # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._offsets: list[int] = []  # byte offset of each whole line read so far
        self._read_to = 0

    async def add(self, episode: Episode) -> None:
        await run_blocking(self._append, episode.model_dump_json() + "\n")

    def _append(self, line: str) -> None:
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a+b") as handle:
                    _drop_torn_tail(handle)
                    handle.write(line.encode("utf-8"))
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:
                raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                               f"could not append an episode to {self.path}: {exc}", Retryability.CONDITIONAL) from None

    async def episodes(self, start: int = 0) -> list[Episode]:
        return await run_blocking(self._read, start)

    def _read(self, start: int) -> list[Episode]:
        with self._lock:
            try:
                with open(self.path, "rb") as handle:
                    if start < len(self._offsets):
                        handle.seek(self._offsets[start])
                        number = start
                    else:
                        handle.seek(self._read_to)
                        number = len(self._offsets)
                    data = handle.read()
                    base = handle.tell() - len(data)
            except FileNotFoundError:
                return []
            except OSError as exc:
                raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_LOAD_FAILED,
                               f"could not read episodes from {self.path}: {exc}", Retryability.CONDITIONAL) from None
            found: list[Episode] = []
            position = 0
            while True:
                newline = data.find(b"\n", position)
                if newline < 0:
                    break  # no newline yet: a line still being written, or torn by a crash; read it later
                line = data[position:newline]
                offset = base + position
                position = newline + 1
                if not line.strip():
                    continue
                if number >= len(self._offsets):
                    self._offsets.append(offset)
                    self._read_to = base + position
                number += 1
                try:
                    episode = Episode.model_validate_json(line)
                except ValidationError as exc:
                    raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                                   f"{self.path}, line {number}: not an episode "
                                   f"({exc.errors(include_url=False, include_input=False)[0]['msg']})") from None
                if number > start:
                    found.append(episode)
            return found

    def __repr__(self) -> str:
        return f"JsonlEpisodeStore({str(self.path)!r})"


def _drop_torn_tail(handle) -> None:
    """Cut a last line left without its newline by a crash mid-write (it is never whole JSON
    that was acknowledged: ``add`` returns only after the newline is fsynced)."""
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return
    keep = size - 1
    while keep > 0:
        handle.seek(keep - 1)
        if handle.read(1) == b"\n":
            break
        keep -= 1
    handle.truncate(keep)
    handle.seek(0, os.SEEK_END)


class SQLiteEpisodeStore:
    """Episodes in a SQLite file (WAL, ``synchronous=FULL``): one row per episode.

    Each call opens its own connection on a worker thread, so processes and event loops
    can share the file.
    """

    _SCHEMA = ("CREATE TABLE IF NOT EXISTS arknb_episodes (position INTEGER PRIMARY KEY AUTOINCREMENT, "
               "episode_id TEXT UNIQUE NOT NULL, document TEXT NOT NULL)")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute(self._SCHEMA)
        return connection

    async def add(self, episode: Episode) -> None:
        await run_blocking(self._add, episode)

    def _add(self, episode: Episode) -> None:
        try:
            connection = self._connect()
            try:
                with connection:
                    connection.execute("INSERT OR IGNORE INTO arknb_episodes (episode_id, document) VALUES (?, ?)",
                                       (episode.episode_id, episode.model_dump_json()))
            finally:
                connection.close()
        except sqlite3.Error as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                           f"could not add an episode to {self.path}: {exc}", Retryability.CONDITIONAL) from None

    async def episodes(self, start: int = 0) -> list[Episode]:
        return await run_blocking(self._episodes, start)

    def _episodes(self, start: int) -> list[Episode]:
        try:
            connection = self._connect()
            try:
                rows = connection.execute("SELECT position, document FROM arknb_episodes ORDER BY position "
                                          "LIMIT -1 OFFSET ?", (start,)).fetchall()
            finally:
                connection.close()
        except sqlite3.Error as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_LOAD_FAILED,
                           f"could not read episodes from {self.path}: {exc}", Retryability.CONDITIONAL) from None
        return _episodes_of(rows, str(self.path))

    def __repr__(self) -> str:
        return f"SQLiteEpisodeStore({str(self.path)!r})"


class DurableEpisodeStore:
    """Episodes in the database of a durable store (``ark.SQLiteStore``,
    ``ark.PostgresStore``): ``store.episode_rows()``, one row per episode, committed
    before :meth:`add` returns. Usable while the store is open."""

    def __init__(self, rows: Any) -> None:
        self._rows = rows

    async def add(self, episode: Episode) -> None:
        await self._rows.add(episode.episode_id, episode.model_dump_json())

    async def episodes(self, start: int = 0) -> list[Episode]:
        return _episodes_of(await self._rows.documents(start), repr(self._rows))

    def __repr__(self) -> str:
        return f"DurableEpisodeStore({self._rows!r})"


def _episodes_of(rows: list[tuple[int, str]], where: str) -> list[Episode]:
    """The episodes of ``(position, document)`` rows, each validated."""
    found = []
    for position, document in rows:
        try:
            found.append(Episode.model_validate_json(document))
        except ValidationError:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                           f"{where}: episode row {position} is not an episode") from None
    return found
