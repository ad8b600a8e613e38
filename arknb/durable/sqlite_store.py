"""SQLiteStore: the embedded durable store, one file (DESIGN §13).

A :class:`~arknb.state.StateStorage` and an :class:`~arknb.durable.OperationStore`: a
session's state (a header row plus a row per message and per usage, so a save appends),
its operations, its outbox and its lease live in one SQLite database, and one
:class:`~arknb.durable.Commit` is one ``BEGIN IMMEDIATE`` transaction. WAL journal,
``synchronous=FULL``: a commit that returned survives a power cut (a commit made with
``sync=False`` survives the process being killed and waits for the next full one).

All SQLite work runs in one worker thread per store, which owns the connection: the
notebook's event loop never blocks on disk, and the store's writes are serialised.
The rows are written by :mod:`arknb.durable._sql` and the layout lives in
:mod:`arknb.durable._database`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability, invalid_argument
from arknb.domain.threads import WorkerThreads
from arknb.events import AgentEvent
from arknb.state import AgentState, validate_session_id

from . import _sql
from ._database import is_damaged, open_database, set_synchronous, transaction
from .operation import Operation
from .store import DEFAULT_LEASE_TTL, Commit, Lease, check_ttl

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")


class SQLiteStore:
    """The durable store in one SQLite database file.

    The file (and its parent directories) is created on the first write; reading from a
    file that does not exist finds nothing. Keep it on a local disk (WAL needs shared
    memory, which network file systems do not provide). Many sessions share one file.

    Call :meth:`aclose` (or :meth:`close`) when done; a closed store refuses every call.

    Example:
        >>> store = ark.SQLiteStore(".arknb/arknb.sqlite3")                    # doctest: +SKIP
        >>> runtime = ark.AgentRuntime(model, storage=store, session_id="demo")  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str], *, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise invalid_argument(f"SQLiteStore expects a database file path, got {type(path).__name__}")
        raw = os.fspath(path)
        if not isinstance(raw, str) or not raw:
            raise invalid_argument(f"SQLiteStore expects a non-empty str path, got {raw!r}")
        # Absolute now, so a later chdir (notebooks do that) cannot move the database.
        self._path = Path(os.path.abspath(raw))
        if self._path.is_dir():
            raise invalid_argument(self._directory_message())
        self.lease_ttl = check_ttl(lease_ttl)
        """Seconds a runtime's lease on a session lives without renewal (DESIGN §13)."""
        self._worker = WorkerThreads(max_workers=1, name="arknb-sqlite")
        self._closed = False
        self._where = str(self._path)
        # Touched only in the worker thread:
        self._conn: sqlite3.Connection | None = None
        self._written: dict[str, _sql.Written] = {}
        self._full = True
        self.commits = 0
        """Transactions written (read by benchmarks)."""
        self.synced_commits = 0
        """Of those, the ones that waited for the disk."""

    @property
    def path(self) -> Path:
        """The database file (absolute)."""
        return self._path

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or :meth:`aclose`."""
        return self._closed

    # -- StateStorage ----------------------------------------------------------------

    async def load(self, session_id: str) -> AgentState | None:
        """The saved state (``state.revision`` is the stored revision), or None.

        Raises:
            ArkError: ``state_corrupt`` naming the session and the file (nothing is
                changed); ``state_version_unsupported`` for a newer state format;
                ``store_version_unsupported`` for a newer database layout;
                ``state_load_failed`` if SQLite cannot read the file.
        """
        validate_session_id(session_id)
        return await self._call(ErrorCode.STATE_LOAD_FAILED, f"could not load session {session_id!r}",
                                self._load, session_id)

    async def save(self, state: AgentState) -> int:
        """Save ``state`` if the stored revision is ``state.revision``; returns the new revision.

        Only the messages and usages new since this instance's last save or load of the
        session are written. A save clears a not-resumable mark.

        Raises:
            ArkError: ``state_conflict`` (another save came first; nothing written),
                ``state_save_failed`` (the transaction failed; the previous state stands).
        """
        if not isinstance(state, AgentState):
            raise invalid_argument(f"save expects an AgentState, got {type(state).__name__}")
        revision = await self.commit(Commit(session_id=state.session_id, state=state))
        assert revision is not None
        return revision

    async def mark_not_resumable(self, session_id: str) -> None:
        """Mark ``session_id`` not resumable without reading its state (seed 000 §9.3)."""
        validate_session_id(session_id)
        await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not mark session {session_id!r} not resumable",
                         self._write_txn, _sql.mark_session, session_id, time.time())

    async def delete(self, session_id: str) -> None:
        """Remove the session: state, operations, outbox and lease (no error if unknown)."""
        validate_session_id(session_id)
        self._written.pop(session_id, None)
        await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not delete session {session_id!r}",
                         self._write_txn, _sql.delete_session, session_id, create=False)

    async def list_sessions(self) -> list[str]:
        """The saved or marked session ids, sorted."""
        ids = await self._call(ErrorCode.STATE_LOAD_FAILED, "could not list the sessions", self._read, _sql.list_sessions)
        sessions = []
        for session_id in ids or ():
            with contextlib.suppress(ArkError):  # rows another program wrote are not sessions
                sessions.append(validate_session_id(session_id))
        return sorted(sessions)

    # -- OperationStore ---------------------------------------------------------------

    async def commit(self, commit: Commit) -> int | None:
        """Write a session's state, operations and outbox events in one transaction.

        Raises:
            ArkError: ``lease_lost``, ``state_conflict``, ``state_save_failed``; nothing
                of the commit is written then.
        """
        session_id = validate_session_id(commit.session_id)
        return await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not commit session {session_id!r}",
                                self._commit, commit)

    async def get_operation(self, operation_id: str) -> Operation | None:
        """The operation with that id, or None."""
        return await self._call(ErrorCode.STATE_LOAD_FAILED, f"could not read operation {operation_id!r}",
                                self._read, _sql.get_operation, operation_id, self._where)

    async def find_operation(self, session_id: str, purpose_key: str) -> Operation | None:
        """The session's operation with ``purpose_key``, or None."""
        return await self._call(ErrorCode.STATE_LOAD_FAILED, f"could not read session {session_id!r}",
                                self._read, _sql.find_operation, session_id, purpose_key, self._where)

    async def list_operations(self, session_id: str, run_id: str | None = None) -> list[Operation]:
        """The session's operations (of one run, if given), in the order they began."""
        found = await self._call(ErrorCode.STATE_LOAD_FAILED, f"could not read session {session_id!r}",
                                 self._read, _sql.list_operations, session_id, run_id, self._where)
        return found or []

    async def read_events(self, session_id: str, after_sequence: int | None = None,
                          limit: int | None = None) -> list[AgentEvent]:
        """The session's outbox events in sequence order (after ``after_sequence``, at most ``limit``)."""
        found = await self._call(ErrorCode.STATE_LOAD_FAILED, f"could not read the events of {session_id!r}",
                                 self._read, _sql.read_events, session_id, after_sequence, limit)
        return found or []

    async def acquire_lease(self, session_id: str, owner: str, *, ttl: float = DEFAULT_LEASE_TTL,
                            takeover: bool = False) -> Lease:
        """Take the session's lease (see :meth:`OperationStore.acquire_lease`)."""
        validate_session_id(session_id)
        return await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not take the lease of {session_id!r}",
                                self._write_txn, _sql.acquire_lease, session_id, owner, ttl, takeover, time.time())

    async def renew_lease(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend the lease; ``lease_lost`` if it was taken over."""
        return await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not renew the lease of {lease.session_id!r}",
                                self._write_txn, _sql.renew_lease, lease, ttl, time.time())

    async def release_lease(self, lease: Lease) -> None:
        """Give the lease up (nothing happens if it was taken over)."""
        await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not release the lease of {lease.session_id!r}",
                         self._write_txn, _sql.release_lease, lease, create=False)

    # -- closing -----------------------------------------------------------------------

    def close(self) -> None:
        """Wait for queued calls, close the connection and stop the worker thread."""
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

    def invocations_for(self, scope: Any) -> Any:
        """The runtime seam that makes a runtime's calls operations of this store (called by
        ``AgentRuntime``; see :mod:`arknb.durable.runtime_seam`)."""
        from .runtime_seam import DurableInvocations  # noqa: PLC0415 - the seam needs the bus

        return DurableInvocations(self, scope, lease_ttl=self.lease_ttl)

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self._path)!r}{', closed' if self._closed else ''})"

    # -- running in the worker thread ------------------------------------------------

    async def _call(self, code: ErrorCode, action: str, work: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if self._closed:
            raise ArkError(ErrorLayer.STORAGE, code,
                           f"{action}: {self!r} is closed; open a new store on the file to go on")
        return await self._worker.run(self._guarded, code, action, work, args, kwargs)

    def _guarded(self, code: ErrorCode, action: str, work: Callable[..., _T], args: tuple, kwargs: dict) -> _T:
        try:
            return work(*args, **kwargs)
        except ArkError:
            raise
        except sqlite3.Error as exc:
            if is_damaged(exc):
                raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                               f"{action}: the database {self._path} is damaged or not an SQLite "
                               f"database ({exc}); it was left untouched") from exc
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:
                raise ArkError(ErrorLayer.STORAGE, code,
                               f"{action}: the disk holding {self._path} is full ({exc}); nothing of this "
                               "commit was written. Free some space and try again", Retryability.CONDITIONAL) from exc
            raise ArkError(ErrorLayer.STORAGE, code, f"{action} in {self._path}: {exc}",
                           Retryability.CONDITIONAL) from exc
        except OSError as exc:  # creating the parent directory
            detail = "the disk is full" if exc.errno == errno.ENOSPC else str(exc)
            raise ArkError(ErrorLayer.STORAGE, code, f"{action} in {self._path}: {detail}",
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
            self._full = True
        return self._conn

    def _read(self, work: Callable[..., _T], *args: Any) -> _T | None:
        conn = self._connection(create=False)
        if conn is None:
            return None
        with transaction(conn, write=False):  # one snapshot
            return work(conn, *args) if work is _sql.list_sessions else work(conn, _sql.SQLITE, *args)

    def _write_txn(self, work: Callable[..., _T], *args: Any, create: bool = True) -> _T | None:
        conn = self._connection(create=create)
        if conn is None:
            return None
        self._sync(conn, True)
        with transaction(conn, write=True):
            result = work(conn, _sql.SQLITE, *args)
        self.commits += 1
        self.synced_commits += 1
        return result

    def _load(self, session_id: str) -> AgentState | None:
        conn = self._connection(create=False)
        if conn is None:
            return None
        with transaction(conn, write=False):  # the session row and its items from one snapshot
            return _sql.load_state(conn, _sql.SQLITE, session_id, self._where, self._written)

    def _commit(self, commit: Commit) -> int | None:
        conn = self._connection(create=True)
        assert conn is not None
        d = _sql.SQLITE
        self._sync(conn, commit.sync)
        written = None
        with transaction(conn, write=True):
            if commit.lease is not None:
                _sql.check_lease(conn, d, commit.lease)
            if commit.state is not None:
                if commit.state.session_id != commit.session_id:
                    raise invalid_argument("a commit's state must belong to its session")
                written = _sql.save_state(conn, d, commit.state, time.time(), self._written)
            _sql.write_operations(conn, d, commit.session_id, commit.operations)
            _sql.append_events(conn, d, commit.session_id, commit.events)
        self.commits += 1
        self.synced_commits += commit.sync
        if written is None:
            return None
        self._written[commit.session_id] = written
        return written.revision

    def _sync(self, conn: sqlite3.Connection, full: bool) -> None:
        if full != self._full:
            set_synchronous(conn, full)
            self._full = full

    def _close_connection(self) -> None:
        self._written.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _directory_message(self) -> str:
        return (f"SQLiteStore expects a database file, but {self._path} is a directory; "
                f"pass a file in it, e.g. {self._path / 'arknb.sqlite3'}")
