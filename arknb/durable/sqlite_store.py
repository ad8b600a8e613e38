"""SQLiteStore: the embedded durable store, one file (DESIGN §13).

A :class:`~arknb.state.StateStorage` and an :class:`~arknb.durable.OperationStore`: a
session's state (a header row plus a row per message and per usage, so a save appends),
its operations, its outbox and its lease live in one SQLite database, and one
:class:`~arknb.durable.Commit` is one ``BEGIN IMMEDIATE`` transaction. WAL journal,
``synchronous=FULL``: a commit that returned survives a power cut (a commit made with
``sync=False`` survives the process being killed and waits for the next full one).

Where the work runs: one worker thread per store owns its main connection and does
everything that may wait — reads, lease writes, checkpoints of the write-ahead log, and
any commit that cannot be made at once. Commits are made in line when they need not wait,
on a second connection that belongs to the thread that commits first (the event loop's):
handing a commit to a thread and back costs more CPU than the transaction (two thread
wake-ups and the event loop's self-pipe, ≈ 0.2 ms a commit on these machines, a third
of a tool call's durable cost). A commit goes to the worker instead when the worker has a
call queued (commits stay in order), when the write lock is taken (``busy_timeout`` 0:
the worker waits for the lock, the event loop does not), when it comes from another
thread, or when the recent in-line commits took longer than
:attr:`SQLiteStore.inline_limit` on average, the disk's answer included (a slow disk:
the next ``_SLOW_PAUSE`` commits). The in-line connection never checkpoints the log; the
worker does, every ``_CHECKPOINT_EVERY`` in-line commits, and the commits made meanwhile
go to the worker after it.

The rows are written by :mod:`arknb.durable._sql` and the layout lives in
:mod:`arknb.durable._database`.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability, invalid_argument
from arknb.domain.threads import WorkerThreads
from arknb.state import AgentState, validate_session_id

from . import _sql
from ._known_rows import KNOWN_ROWS
from ._row_store import RowStore
from ._database import LAYOUT_VERSION, is_damaged, open_database, set_synchronous, transaction
from .store import DEFAULT_LEASE_TTL, Commit, check_ttl

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")
_log = logging.getLogger("arknb.durable")

_BUSY = object()          # an in-line commit found the write lock taken: nothing was written
_CHECKPOINT_EVERY = 200   # in-line commits between two checkpoints of the log (by the worker)
_SLOW_PAUSE = 200         # commits sent to the worker after the in-line ones were slow


class SQLiteStore(RowStore):
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
        self._written = KNOWN_ROWS.view(self.location)  # shared with every store on the file
        self._full = True
        # The in-line connection (see the module docstring): touched only by its owner thread.
        self._here: sqlite3.Connection | None = None
        self._here_owner: tuple[int, int] | None = None  # (pid, thread id) that opened it
        self._here_full = True
        self._here_refused = False     # it could not be opened: every commit goes to the worker
        self._slow_left = 0            # commits still sent to the worker after slow ones
        self._here_wall = 0.0          # moving average of the in-line commits' seconds
        self._since_checkpoint = 0
        self._queued = 0               # worker calls submitted and not finished
        self._queued_lock = threading.Lock()
        self.commits = 0
        """Transactions written (read by benchmarks)."""
        self.synced_commits = 0
        """Of those, the ones that waited for the disk."""
        self.inline_commits = 0
        """Of those, the ones made in line on the caller's thread."""
        self.checkpoints = 0
        """Checkpoints of the log the worker made for the in-line commits."""
        self.inline_limit = 0.010
        """Seconds the in-line commits may take on average (the disk's answer included,
        under a screen frame) before the next commits go to the worker thread for a while:
        on a slow disk the event loop does not wait for it."""

    @property
    def path(self) -> Path:
        """The database file (absolute)."""
        return self._path

    @property
    def location(self) -> tuple[str, str]:
        """The resolved database file: two stores on one file share their sessions."""
        return ("sqlite", os.path.realpath(self._path))

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self._path)!r}{', closed' if self._closed else ''})"

    # -- commits in line -------------------------------------------------------------

    async def commit(self, commit: Commit) -> int | None:
        """Write a session's state, operations and outbox events in one transaction (see
        :meth:`RowStore.commit`), in line when it can be made at once (module docstring)."""
        if self._may_commit_here():
            session_id = validate_session_id(commit.session_id)
            outcome = self._guarded(ErrorCode.STATE_SAVE_FAILED, f"could not commit session {session_id!r}",
                                    self._commit_here, (commit,), {})
            if outcome is not _BUSY:
                return outcome
        return await super().commit(commit)

    def _may_commit_here(self) -> bool:
        if self._closed or self._queued or self._conn is None or self._here_refused:
            return False  # (the worker opens the file first: creating it, migrating it)
        if self._slow_left:
            self._slow_left -= 1
            return False
        owner = (os.getpid(), threading.get_ident())
        if self._here is None:
            try:
                self._here = open_database(self._path, any_thread=True)  # (reads only: the layout is current)
                self._here.execute("PRAGMA busy_timeout = 0")       # a held lock: the worker waits, not the loop
                self._here.execute("PRAGMA wal_autocheckpoint = 0")  # the worker checkpoints
            except (ArkError, sqlite3.Error, OSError) as exc:
                _log.info("%r commits on its worker thread only: %s", self, exc)
                self._here_refused = True
                self._here = None
                return False
            self._here_owner, self._here_full = owner, True
        return self._here_owner == owner

    def _commit_here(self, commit: Commit) -> object:
        conn = self._here
        assert conn is not None
        if commit.sync != self._here_full:
            set_synchronous(conn, commit.sync)
            self._here_full = commit.sync
        started = time.perf_counter()
        try:
            written = self._write_commit(conn, commit)
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY:
                return _BUSY  # rolled back (or never begun): the worker makes it, waiting for the lock
            raise
        # A moving average, so that one hiccup of a shared machine does not count as a slow disk.
        self._here_wall += (time.perf_counter() - started - self._here_wall) * 0.25
        if self._here_wall > self.inline_limit:
            self._slow_left, self._here_wall = _SLOW_PAUSE, 0.0
        self.inline_commits += 1
        self._since_checkpoint += 1
        if self._since_checkpoint >= _CHECKPOINT_EVERY:
            self._since_checkpoint = 0
            self._checkpoint_soon()
        return self._committed(commit, written)

    def _checkpoint_soon(self) -> None:
        """Have the worker copy the log into the database file, without waiting for it.

        Counted as a queued call, so commits go to the worker until it is done: no commit
        of this store writes while it runs, so it copies the whole log and the next commit
        starts the log again from its beginning (a checkpoint racing in-line commits could
        fall behind them for good, and the log would grow without end). PASSIVE: it waits
        for no other process's reader or writer either."""
        if self._closed:
            return
        ticket = self._count()
        try:
            self._worker.post(self._counted, ticket, ErrorCode.STATE_SAVE_FAILED, "checkpoint", self._checkpoint_log,
                              (), {})
        except RuntimeError:  # the worker is stopped (the store is closing): nothing to do
            self._uncount(ticket)

    def _checkpoint_log(self) -> None:
        try:
            conn = self._connection(create=False)
            if conn is not None:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                self.checkpoints += 1
        except (ArkError, sqlite3.Error, OSError) as exc:  # the next one tries again
            _log.warning("could not checkpoint the log of %s: %s", self._path, exc)

    def _close_here(self) -> None:
        here, self._here = self._here, None
        if here is not None and self._here_owner is not None and self._here_owner[0] == os.getpid():
            here.close()  # (a forked child never touches its parent's connection)

    def close(self) -> None:
        """Wait for queued calls, close the connections and stop the worker thread."""
        if not self._closed:
            super().close()
            self._close_here()

    async def aclose(self) -> None:
        """:meth:`close` without blocking the event loop."""
        if not self._closed:
            await super().aclose()
            self._close_here()

    # -- running in the worker thread ------------------------------------------------

    async def _call(self, code: ErrorCode, action: str, work: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if self._closed:
            raise ArkError(ErrorLayer.STORAGE, code, f"{action}: {self!r} is closed; open a new store to go on")
        # Counted from here until the worker finished it (not until this task stops waiting:
        # a cancelled wait leaves the call running, and no commit may overtake it).
        ticket = self._count()
        try:
            return await self._worker.run(self._counted, ticket, code, action, work, args, kwargs)
        except RuntimeError:
            self._uncount(ticket)  # the worker refused it (stopped); a call that ran is uncounted already
            raise

    def _counted(self, ticket: list, code: ErrorCode, action: str, work: Callable[..., _T], args: tuple,
                 kwargs: dict) -> _T:
        try:
            return self._guarded(code, action, work, args, kwargs)
        finally:
            self._uncount(ticket)

    def _count(self) -> list:
        """Count one more worker call as queued; the ticket it returns uncounts it once."""
        with self._queued_lock:
            self._queued += 1
        return [False]  # True once uncounted

    def _uncount(self, ticket: list) -> None:
        with self._queued_lock:
            if not ticket[0]:
                ticket[0] = True
                self._queued -= 1

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

    def _write_txn(self, work: Callable[..., _T], *args: Any, create: bool = True, sync: bool = True) -> _T | None:
        conn = self._connection(create=create)
        if conn is None:
            return None
        self._sync(conn, sync)
        with transaction(conn, write=True):
            _sql.check_layout(conn, _sql.SQLITE, LAYOUT_VERSION, self._where)
            result = work(conn, _sql.SQLITE, *args)
        self.commits += 1
        self.synced_commits += sync
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
        self._sync(conn, commit.sync)
        return self._committed(commit, self._write_commit(conn, commit))

    def _write_commit(self, conn: sqlite3.Connection, commit: Commit) -> _sql.Written | None:
        """``commit``'s rows in one write transaction on ``conn`` (the worker's or the in-line one)."""
        with transaction(conn, write=True):
            _sql.check_layout(conn, _sql.SQLITE, LAYOUT_VERSION, self._where)
            return _sql.write_commit(conn, _sql.SQLITE, commit, time.time(), self._written, self._where)

    def _sync(self, conn: sqlite3.Connection, full: bool) -> None:
        if full != self._full:
            set_synchronous(conn, full)
            self._full = full

    def _shutdown(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _directory_message(self) -> str:
        return (f"SQLiteStore expects a database file, but {self._path} is a directory; "
                f"pass a file in it, e.g. {self._path / 'arknb.sqlite3'}")
