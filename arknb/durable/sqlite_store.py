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

import errno
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability, invalid_argument
from arknb.domain.threads import WorkerThreads
from arknb.state import AgentState

from . import _sql
from ._known_rows import KNOWN_ROWS
from ._row_store import RowStore
from ._database import is_damaged, open_database, set_synchronous, transaction
from .store import DEFAULT_LEASE_TTL, Commit, check_ttl

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")


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
        self.commits = 0
        """Transactions written (read by benchmarks)."""
        self.synced_commits = 0
        """Of those, the ones that waited for the disk."""

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

    # -- running in the worker thread ------------------------------------------------

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
        with transaction(conn, write=True):
            written = _sql.write_commit(conn, _sql.SQLITE, commit, time.time(), self._written, self._where)
        return self._committed(commit, written)

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
