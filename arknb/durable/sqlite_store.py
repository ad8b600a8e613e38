"""Agent state in an SQLite database: a row per session, a row per message and per usage.

A session row holds the state's JSON without its two growing sequences, ``history``
and ``usages``; every message and every usage is a row of its own. The runtime only
appends to them and their items are immutable, so a save compares each sequence with
the items this instance last wrote (the same objects, mostly: a pointer comparison
each) and writes only the new ones, in one transaction with the session row: a save at
turn 1,000 costs about what it costs at turn 10. A history that was rewritten (a hook
compressed it) is replaced from its first changed message on.

Saves are compare-and-swaps on the state's revision (the contract of
:class:`~arknb.state.StateStorage`): the stored revision is read and the new one written
in one ``BEGIN IMMEDIATE`` transaction, so of two processes saving from the same
revision exactly one wins and the other gets ``state_conflict``.

Another store instance, in this process or another, may write the same session. Each
instance has a writer token and numbers its saves; the session row records the pair.
A save that finds a pair it did not write (or load) itself rewrites the whole session
instead of appending to rows it does not know.

All SQLite work runs in one worker thread per store, which owns the connection: the
notebook's event loop never blocks on disk, and the store's writes are serialised.
The database layout lives in :mod:`arknb.durable._database`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability, invalid_argument
from arknb.domain.threads import WorkerThreads
from arknb.state import SCHEMA_VERSION, AgentState, validate_session_id
from arknb.state.storage import state_conflict
from arknb.state._encoding import APPEND_ONLY_FIELDS, header_json, splice

from ._database import is_damaged, open_database, transaction

__all__ = ["SQLiteStateStorage"]

_T = TypeVar("_T")

# The state's append-only sequences, each stored a row per item: (AgentState field,
# its table). The sessions row counts each table's rows in history_len and usages_len.
_TABLES = {"history": "messages", "usages": "usages"}
_SEQUENCES = tuple((field, _TABLES[field]) for field in APPEND_ONLY_FIELDS)

_READ_SESSION = ("SELECT header, not_resumable, writer, version, history_len, usages_len "
                 "FROM sessions WHERE session_id = ?")
_READ_VERSION = "SELECT writer, version, history_len, usages_len FROM sessions WHERE session_id = ?"
# The stored revision without parsing the header in Python (json_type tells an integer
# from true, which json_extract would also give as 1).
_READ_REVISION = ("SELECT header IS NULL, "
                  "CASE WHEN json_valid(header) THEN json_type(header) = 'object' ELSE 0 END, "
                  "CASE WHEN json_valid(header) THEN json_type(header, '$.revision') END, "
                  "CASE WHEN json_valid(header) THEN json_extract(header, '$.revision') END, "
                  "CASE WHEN json_valid(header) THEN json_extract(header, '$.schema_version') END "
                  "FROM sessions WHERE session_id = ?")
_WRITE_SESSION = (
    "INSERT INTO sessions (session_id, header, history_len, usages_len, not_resumable, writer, "
    "version, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
    "header = excluded.header, history_len = excluded.history_len, usages_len = excluded.usages_len, "
    "not_resumable = 0, writer = excluded.writer, version = excluded.version, "
    "updated_at = excluded.updated_at")
_WRITE_MARKER = ("INSERT INTO sessions (session_id, header, history_len, usages_len, not_resumable, "
                 "writer, version, updated_at) VALUES (?, NULL, 0, 0, 1, NULL, 0, ?)")


@dataclass(slots=True)
class _Written:
    """What the database holds for one session, as far as this instance knows: the
    sequences it saved or loaded (in :data:`_SEQUENCES` order), the session row's
    writer and version then, and its header text."""

    sequences: tuple[tuple[Any, ...], ...]
    writer: str | None
    version: int
    header: str | None = None

    def matches(self, row: tuple | None) -> bool:
        """True if ``row`` (writer, version, lengths...) is still the one described."""
        return row == (self.writer, self.version, *map(len, self.sequences))


class SQLiteStateStorage:
    """A :class:`~arknb.state.StateStorage` in one SQLite database file.

    The file (and its parent directories) is created on the first save; loading from a
    file that does not exist finds no sessions. The journal is in WAL mode with
    ``synchronous=FULL`` and every save is one ``BEGIN IMMEDIATE`` transaction: a crash
    leaves the old state or the new one, never half of either. Keep the file on a local
    disk (WAL needs shared memory, which network file systems do not provide).

    Call :meth:`aclose` (or :meth:`close`) when done; a closed store refuses every call.

    Example:
        >>> storage = SQLiteStateStorage(".arknb/state.sqlite3")   # doctest: +SKIP
        >>> await storage.save(AgentState(session_id="demo"))      # doctest: +SKIP
        >>> await storage.aclose()                                  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise invalid_argument(f"SQLiteStateStorage expects a database file path, got "
                                   f"{type(path).__name__}")
        raw = os.fspath(path)
        if not isinstance(raw, str) or not raw:
            raise invalid_argument(f"SQLiteStateStorage expects a non-empty str path, got {raw!r}")
        # Absolute now, so a later chdir (notebooks do that) cannot move the database.
        self._path = Path(os.path.abspath(raw))
        if self._path.is_dir():
            raise invalid_argument(self._directory_message())
        self._token = uuid.uuid4().hex
        self._save_numbers = itertools.count(1)
        # One thread owns the connection; it also serialises every write.
        self._worker = WorkerThreads(max_workers=1, name="arknb-sqlite")
        self._closed = False
        # Touched only in the worker thread:
        self._conn: sqlite3.Connection | None = None
        self._written: dict[str, _Written] = {}

    @property
    def path(self) -> Path:
        """The database file (absolute)."""
        return self._path

    @property
    def location(self) -> tuple[str, str]:
        """The resolved database file: two stores on one file share their sessions."""
        return ("sqlite", os.path.realpath(self._path))

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or :meth:`aclose`."""
        return self._closed

    # -- StateStorage ----------------------------------------------------------------

    async def load(self, session_id: str) -> AgentState | None:
        """The saved state, or None if the session is unknown.

        A session that was only marked not resumable comes back as an empty state with
        ``not_resumable=True``; a marked session with a saved state comes back with
        ``not_resumable=True`` set.

        Raises:
            ArkError: ``state_corrupt`` naming the session and the database (nothing is
                changed); ``state_version_unsupported`` for a newer format;
                ``state_load_failed`` (storage) if SQLite cannot read the file.
        """
        validate_session_id(session_id)
        return await self._call(ErrorCode.STATE_LOAD_FAILED, f"could not load session {session_id!r}",
                                self._load, session_id)

    async def save(self, state: AgentState) -> int:
        """Save ``state`` in one transaction if the stored revision is ``state.revision``,
        writing only the messages and usages that are new since this instance's last save
        or load of the session; returns the new revision (``state.revision + 1``). A
        successful save clears a not-resumable mark: the saved state itself now says
        whether it is resumable.

        Raises:
            ArkError: ``state_conflict`` if the stored revision is another one (checked in
                the same ``BEGIN IMMEDIATE`` transaction as the write, so two processes
                never both win); ``state_corrupt`` / ``state_version_unsupported`` if the
                stored state cannot be read or is from a newer arknb (it is never
                overwritten); ``state_save_failed`` (storage) if the transaction fails. In
                every case the previous state is still in place.
        """
        if not isinstance(state, AgentState):
            raise invalid_argument(f"save expects an AgentState, got {type(state).__name__}")
        session_id = validate_session_id(state.session_id)
        return await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not save session {session_id!r}",
                                self._save, state)

    async def mark_not_resumable(self, session_id: str) -> None:
        """Mark ``session_id`` not resumable without reading its state, so it works when
        the state is missing or unreadable (seed 000 §9.3: the fallback after a failed
        terminal save).

        Raises:
            ArkError: ``state_save_failed`` if the mark cannot be written.
        """
        validate_session_id(session_id)
        await self._call(ErrorCode.STATE_SAVE_FAILED,
                         f"could not mark session {session_id!r} not resumable",
                         self._mark, session_id)

    async def delete(self, session_id: str) -> None:
        """Remove the session's rows (no error if it is unknown)."""
        validate_session_id(session_id)
        await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not delete session {session_id!r}",
                         self._delete, session_id)

    async def list_sessions(self) -> list[str]:
        """The saved or marked session ids, sorted."""
        return await self._call(ErrorCode.STATE_LOAD_FAILED, "could not list the sessions",
                                self._list)

    # -- closing -----------------------------------------------------------------------

    def close(self) -> None:
        """Wait for queued calls, close the connection and stop the worker thread.
        Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._worker.stop(self._close_connection, wait=True)

    async def aclose(self) -> None:
        """:meth:`close` without blocking the event loop."""
        if self._closed:
            return
        self._closed = True
        await self._worker.run(self._close_connection)
        self._worker.stop()

    def __repr__(self) -> str:
        return f"SQLiteStateStorage({str(self._path)!r}{', closed' if self._closed else ''})"

    # -- running in the worker thread ------------------------------------------------

    async def _call(self, code: ErrorCode, action: str, work: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise ArkError(ErrorLayer.STORAGE, code,
                           f"{action}: {self!r} is closed; open a new store on the file to go on")
        return await self._worker.run(self._guarded, code, action, work, args)

    def _guarded(self, code: ErrorCode, action: str, work: Callable[..., _T], args: tuple) -> _T:
        try:
            return work(*args)
        except ArkError:
            raise
        except sqlite3.Error as exc:
            if is_damaged(exc):
                raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                               f"{action}: the database {self._path} is damaged or not an SQLite "
                               f"database ({exc}); it was left untouched") from exc
            raise ArkError(ErrorLayer.STORAGE, code, f"{action} in {self._path}: {exc}",
                           Retryability.CONDITIONAL) from exc
        except OSError as exc:  # creating the parent directory
            raise ArkError(ErrorLayer.STORAGE, code, f"{action} in {self._path}: {exc}",
                           Retryability.CONDITIONAL) from exc

    def _connection(self, *, create: bool) -> sqlite3.Connection | None:
        """The open connection; None if ``create`` is false and there is no database yet."""
        if self._conn is None:
            if self._path.is_dir():  # created after the constructor checked
                raise invalid_argument(self._directory_message())
            if not create and not self._path.exists():
                return None
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = open_database(self._path)
        return self._conn

    def _load(self, session_id: str) -> AgentState | None:
        conn = self._connection(create=False)
        if conn is None:
            return None
        with transaction(conn, write=False):  # the session row and its items from one snapshot
            row = conn.execute(_READ_SESSION, (session_id,)).fetchone()
            if row is None:
                return None
            header, marked, writer, version, *lengths = row
            if header is None:  # only marked, never saved
                return AgentState(session_id=session_id, not_resumable=True)
            bodies = []
            for (_, table), length in zip(_SEQUENCES, lengths, strict=True):
                rows = conn.execute(f"SELECT idx, body FROM {table} WHERE session_id = ? ORDER BY idx",
                                    (session_id,)).fetchall()
                bodies.append(self._check_rows(session_id, table, length, rows))
        if not isinstance(header, str):
            raise self._corrupt(session_id, f"its header is {type(header).__name__}, not text")
        # The header with the sequences spliced in (as the file store writes its
        # documents), parsed by from_json: migrations and version refusals are the
        # files' own. An empty sequence is left out: its default is the same.
        present = [(field, items) for field, items in zip(APPEND_ONLY_FIELDS, bodies, strict=True) if items]
        document = splice(header, present)
        state = AgentState.from_json(document, source=f"session {session_id!r} ({self._path})")
        if state.session_id != session_id:
            raise self._corrupt(session_id, f"the row holds session {state.session_id!r}")
        loaded = tuple(getattr(state, field) for field in APPEND_ONLY_FIELDS)
        known = self._written.get(session_id)
        if (known is not None and known.matches((writer, version, *lengths))
                and loaded == known.sequences):
            # The rows are what this instance last wrote: hand out those very (immutable)
            # items, so a save continuing from either the loaded or the saved state appends.
            state = state.model_copy(update=dict(zip(APPEND_ONLY_FIELDS, known.sequences, strict=True)))
        else:
            self._written[session_id] = _Written(loaded, writer, version, header)  # the next save appends
        return state.model_copy(update={"not_resumable": True}) if marked else state

    def _check_rows(self, session_id: str, table: str, length: object,
                    rows: list[tuple[Any, Any]]) -> list[str]:
        if type(length) is not int or len(rows) != length:
            raise self._corrupt(session_id, f"{table}: expected {length!r} rows, found {len(rows)}")
        for expected, (idx, body) in enumerate(rows):
            if idx != expected:
                raise self._corrupt(session_id, f"{table}: row {expected} is missing "
                                                f"(the rows jump to idx {idx!r})")
            if not isinstance(body, str):
                raise self._corrupt(session_id, f"{table}: row {idx} is {type(body).__name__}, not text")
        return [body for _, body in rows]

    def _save(self, state: AgentState) -> int:
        session_id = state.session_id
        revision = state.revision + 1
        # A shallow copy: the sequences keep their items, so the rows still compare by identity.
        header = header_json(state.model_copy(update={"revision": revision}))
        sequences = tuple(getattr(state, field) for field in APPEND_ONLY_FIELDS)
        conn = self._connection(create=True)
        known = self._written.get(session_id)
        version = next(self._save_numbers)
        with transaction(conn, write=True):
            # BEGIN IMMEDIATE holds the write lock from here to the commit: the revision
            # compared is the one replaced (also against other processes).
            stored = self._stored_revision(conn, session_id)
            if stored != state.revision:
                raise state_conflict(session_id, state.revision, stored, repr(self))
            self._check_header(conn, session_id, known)
            row = conn.execute(_READ_VERSION, (session_id,)).fetchone()
            # Append only to rows this instance knows: the row must still be the one it
            # last wrote or loaded (another instance may have saved since).
            if known is not None and known.matches(row):
                written: tuple = known.sequences
            else:
                written = (None,) * len(_SEQUENCES)
            for (_, table), items, before in zip(_SEQUENCES, sequences, written, strict=True):
                _write_rows(conn, table, session_id, items, before)
            conn.execute(_WRITE_SESSION, (session_id, header, *map(len, sequences), self._token,
                                          version, time.time()))
        self._written[session_id] = _Written(sequences, self._token, version, header)
        return revision

    def _stored_revision(self, conn: sqlite3.Connection, session_id: str) -> int:
        """The revision of the stored state (0 if there is none), read inside the transaction.

        A header that is not JSON, or whose revision is not an integer, is a state this
        save must not overwrite; neither is one from a newer arknb.
        """
        row = conn.execute(_READ_REVISION, (session_id,)).fetchone()
        if row is None or row[0]:  # no row, or only marked not resumable
            return 0
        _, valid, kind, revision, schema_version = row
        problem = None
        if not valid:
            problem = "its header is not a JSON object"
        elif kind is not None and kind != "integer":
            problem = f"its revision is a JSON {kind}, not an integer"
        elif revision is not None and revision < 0:
            problem = f"its revision {revision} is negative"
        if problem is not None:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                           f"saved state from session {session_id!r} ({self._path}) is corrupt: {problem}; "
                           "the save was refused, so it stays as it is (delete the session to start over: "
                           "storage.delete(...) or AgentRuntime(..., fresh=True))")
        if type(schema_version) is int and schema_version > SCHEMA_VERSION:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_VERSION_UNSUPPORTED,
                           f"saved state from session {session_id!r} ({self._path}) has schema_version "
                           f"{schema_version}, but this arknb writes {SCHEMA_VERSION}; the save was refused "
                           "so a newer arknb's state is not overwritten")
        return revision if revision is not None else 0  # a version 2 header has none: revision 0

    def _check_header(self, conn: sqlite3.Connection, session_id: str, known: _Written | None) -> None:
        """Refuse to overwrite a stored header a load would refuse (unknown fields, wrong
        types: edited by hand, or by another program). Only a header this instance did not
        write or load itself is parsed, so a save of its own session costs one small read.
        """
        row = conn.execute("SELECT header FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        header = row[0] if row is not None else None
        if header is None or (known is not None and header == known.header):
            return
        try:
            if not isinstance(header, str):
                raise self._corrupt(session_id, f"its header is {type(header).__name__}, not text")
            AgentState.from_json(header, source=f"session {session_id!r} ({self._path})")
        except ArkError as exc:
            raise ArkError(exc.layer, exc.code,
                           f"{exc.message}; the save was refused, so it stays as it is (fix it, or delete the "
                           "session to start over: storage.delete(...) or AgentRuntime(..., fresh=True))",
                           exc.retryability) from None

    def _mark(self, session_id: str) -> None:
        conn = self._connection(create=True)
        with transaction(conn, write=True):
            # Only the column: the header and items may be unreadable, and stay as
            # they are (writer and version too, so caches of the rows stay valid).
            updated = conn.execute("UPDATE sessions SET not_resumable = 1 WHERE session_id = ?",
                                   (session_id,)).rowcount
            if not updated:
                conn.execute(_WRITE_MARKER, (session_id, time.time()))

    def _delete(self, session_id: str) -> None:
        self._written.pop(session_id, None)
        conn = self._connection(create=False)
        if conn is None:
            return
        with transaction(conn, write=True):
            for _, table in _SEQUENCES:
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))

    def _list(self) -> list[str]:
        conn = self._connection(create=False)
        if conn is None:
            return []
        sessions = []
        for (session_id,) in conn.execute("SELECT session_id FROM sessions"):
            with contextlib.suppress(ArkError):  # rows another program wrote are not sessions
                sessions.append(validate_session_id(session_id))
        return sorted(sessions)

    def _close_connection(self) -> None:
        self._written.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- errors ----------------------------------------------------------------------------

    def _corrupt(self, session_id: str, detail: str) -> ArkError:
        return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                        f"saved state from session {session_id!r} ({self._path}) is corrupt: {detail}")

    def _directory_message(self) -> str:
        return (f"SQLiteStateStorage expects a database file, but {self._path} is a directory; "
                f"pass a file in it, e.g. {self._path / 'state.sqlite3'}")


def _write_rows(conn: sqlite3.Connection, table: str, session_id: str, items: tuple[Any, ...],
                written: tuple[Any, ...] | None) -> None:
    """Bring ``table``'s rows of the session in line with ``items``, given the items the
    rows are known to hold (None: unknown, so they are all replaced)."""
    kept = 0 if written is None else _kept_rows(items, written)
    if written is None or kept < len(written):
        conn.execute(f"DELETE FROM {table} WHERE session_id = ? AND idx >= ?", (session_id, kept))
    conn.executemany(f"INSERT INTO {table} (session_id, idx, body) VALUES (?, ?, ?)",
                     [(session_id, i, items[i].model_dump_json()) for i in range(kept, len(items))])


def _kept_rows(items: tuple[Any, ...], written: tuple[Any, ...]) -> int:
    """How many leading ``items`` equal the ones written: their rows stay.

    The runtime carries its items over from state to state, so they are mostly the very
    same objects, which tuple equality checks first (in C): for an appended sequence
    this costs a pointer comparison per item, no encoding.
    """
    n = min(len(items), len(written))
    if items[:n] == written[:n]:
        return n
    return next(i for i, (a, b) in enumerate(zip(items, written, strict=False)) if a is not b and a != b)
