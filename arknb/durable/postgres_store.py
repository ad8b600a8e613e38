"""PostgresStore: the durable store for many kernels on many machines (DESIGN §13).

The same tables and the same rows as :class:`~arknb.durable.SQLiteStore` (written by
:mod:`arknb.durable._sql`), in one PostgreSQL database reached with psycopg 3 (the
``arknb[postgres]`` extra). A :class:`~arknb.durable.Commit` is one transaction; the
session and lease rows are locked (``SELECT ... FOR UPDATE``) so two kernels writing one
session serialise on them, and a commit made with ``sync=False`` uses
``synchronous_commit = off`` (it survives the kernel, not a crash of the server).

The connection is used from one worker thread (psycopg's blocking API, so the rows code
is the SQLite store's); pass ``pool=`` (a ``psycopg_pool.ConnectionPool``) to share
connections between stores. A connection that died while idle (a server restart,
``idle_session_timeout``, a killed backend) is replaced and the call made again once, as
the server had answered nothing of it; a connection lost after the server answered (a
transaction killed while it ran, a COMMIT under way) fails the call honestly, and the
next call reconnects. Every write transaction first checks the
database's layout version, so a database a newer arknb upgraded while this store had it
open is never written by it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, Callable, TypeVar

from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability, invalid_argument
from arknb.domain.threads import WorkerThreads
from arknb.state import AgentState

from . import _sql
from ._known_rows import KNOWN_ROWS
from ._row_store import RowStore
from .store import DEFAULT_LEASE_TTL, Commit, check_ttl

__all__ = ["PG_LAYOUT_STEPS", "PG_LAYOUT_VERSION", "PostgresStore"]

_T = TypeVar("_T")
_log = logging.getLogger("arknb.durable")

PG_LAYOUT_STEPS: tuple[tuple[str, ...], ...] = (
    # 1: everything SQLite's layouts 1 and 2 hold, in one step.
    (
        "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE sessions (
            session_id    TEXT PRIMARY KEY,
            header        TEXT,
            history_len   INTEGER NOT NULL,
            usages_len    INTEGER NOT NULL,
            not_resumable INTEGER NOT NULL DEFAULT 0,
            revision      INTEGER NOT NULL DEFAULT 0,
            updated_at    DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE messages (session_id TEXT NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL,
            PRIMARY KEY (session_id, idx))""",
        """CREATE TABLE usages (session_id TEXT NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL,
            PRIMARY KEY (session_id, idx))""",
        """CREATE TABLE operations (
            operation_id TEXT PRIMARY KEY,
            session_id   TEXT NOT NULL,
            run_id       TEXT NOT NULL,
            purpose_key  TEXT NOT NULL,
            ordinal      INTEGER NOT NULL,
            phase        TEXT NOT NULL,
            status       TEXT,
            body         TEXT NOT NULL,
            updated_at   DOUBLE PRECISION NOT NULL)""",
        "CREATE UNIQUE INDEX operations_purpose ON operations (session_id, purpose_key)",
        "CREATE INDEX operations_order ON operations (session_id, ordinal)",
        """CREATE TABLE outbox (session_id TEXT NOT NULL, sequence BIGINT NOT NULL, event_type TEXT NOT NULL,
            body TEXT NOT NULL, PRIMARY KEY (session_id, sequence))""",
        """CREATE TABLE leases (session_id TEXT PRIMARY KEY, owner TEXT, generation INTEGER NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL)""",
    ),
    # 2: SQLite's layout 3: a session row's incarnation, new when the row is created and
    # whenever anything writes the session's message or usage rows (see _known_rows.py),
    # and the episodes table.
    (
        "ALTER TABLE sessions ADD COLUMN incarnation TEXT",
        "UPDATE sessions SET incarnation = md5(random()::text || clock_timestamp()::text || session_id)",
        """CREATE OR REPLACE FUNCTION arknb_rows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE sessions SET incarnation = md5(random()::text || clock_timestamp()::text)
                WHERE session_id IN (NEW.session_id, OLD.session_id);  -- NEW or OLD is NULL on insert or delete
                RETURN NULL;
            END $$""",
        *(f"CREATE TRIGGER {table}_changed AFTER INSERT OR UPDATE OR DELETE ON {table} "
          "FOR EACH ROW EXECUTE FUNCTION arknb_rows_changed()" for table in ("messages", "usages")),
        # EpisodicMemory(store)'s rows (_episode_rows.py).
        """CREATE TABLE IF NOT EXISTS arknb_episodes (position BIGSERIAL PRIMARY KEY,
            episode_id TEXT UNIQUE NOT NULL, document TEXT NOT NULL)""",
    ),
)
"""``PG_LAYOUT_STEPS[n]`` lifts a database from layout version ``n`` to ``n + 1``."""

PG_LAYOUT_VERSION = len(PG_LAYOUT_STEPS)
_OURS = {"store_meta", "sessions", "messages", "usages", "operations", "outbox", "leases"}
_MIGRATION_LOCK = 0x61726B6E62  # "arknb": one migration at a time per database


class PostgresStore(RowStore):
    """The durable store in a PostgreSQL database.

    Args:
        dsn: a libpq connection string (``"host=... dbname=... user=..."`` or a URL).
        pool: a ``psycopg_pool.ConnectionPool`` to take connections from instead.
        lease_ttl: seconds a runtime's lease on a session lives without renewal.

    Example:
        >>> store = ark.PostgresStore("postgresql://arknb@db.internal/agents")   # doctest: +SKIP
        >>> runtime = ark.AgentRuntime(model, storage=store, session_id="demo")   # doctest: +SKIP
    """

    def __init__(self, dsn: str | None = None, *, pool: Any = None, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        if pool is None and (not isinstance(dsn, str) or not dsn.strip()):
            raise invalid_argument(f"PostgresStore needs a connection string (dsn) or a pool, got {dsn!r}")
        if pool is not None and not callable(getattr(pool, "connection", None)):
            raise invalid_argument(f"pool must be a psycopg_pool.ConnectionPool, got {type(pool).__name__}")
        try:
            import psycopg  # noqa: F401, PLC0415 - the optional extra
        except ImportError:  # pragma: no cover - depends on the installation
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           "PostgresStore needs psycopg 3: pip install 'arknb[postgres]'") from None
        self._dsn = dsn
        self._pool = pool
        self.lease_ttl = check_ttl(lease_ttl)
        self._worker = WorkerThreads(max_workers=1, name="arknb-postgres")
        self._closed = False
        self._where = "PostgreSQL " + _describe(dsn) if dsn else "PostgreSQL (pool)"
        self._conn: Any = None      # touched only in the worker thread
        self._checked = False
        self._answered = False      # the server answered a statement of the current write transaction
        self._written = KNOWN_ROWS.view(self.location)
        self.commits = 0
        self.synced_commits = 0

    @property
    def location(self) -> tuple[str, str]:
        """Where the sessions live: two stores on one database share them."""
        return ("postgres", self._where) if self._pool is None else ("postgres-pool", str(id(self._pool)))

    def __repr__(self) -> str:
        return f"PostgresStore({self._where!r}{', closed' if self._closed else ''})"

    # -- the worker thread -------------------------------------------------------------

    def _guarded(self, code: ErrorCode, action: str, work: Callable[..., _T], args: tuple, kwargs: dict) -> _T:
        import psycopg  # noqa: PLC0415

        try:
            try:
                return self._attempt(work, args, kwargs)
            except psycopg.OperationalError as exc:
                if not self._may_retry():
                    raise
                # The connection died while it sat idle (a server restart, idle_session_timeout,
                # a killed backend): the server answered nothing of this call, so it is made
                # again, once, on a new connection.
                _log.info("%r reconnects: its idle connection had died (%s)", self, str(exc).strip())
                return self._attempt(work, args, kwargs)
        except ArkError:
            raise
        except psycopg.errors.UniqueViolation as exc:  # two first saves of one session raced
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CONFLICT,
                           f"{action}: another writer created the same row first ({exc.diag.constraint_name}); "
                           "nothing was written. Reload the session to go on") from exc
        except psycopg.errors.DiskFull as exc:
            raise ArkError(ErrorLayer.STORAGE, code, f"{action}: the database server's disk is full ({exc}); "
                           "nothing of this commit was written", Retryability.CONDITIONAL) from exc
        except psycopg.OperationalError as exc:
            self._shutdown()  # the next call connects again
            raise ArkError(ErrorLayer.STORAGE, code,
                           f"{action}: the connection to {self._where} failed ({str(exc).strip()}); nothing of "
                           "this transaction was written, the next call reconnects", Retryability.CONDITIONAL) from exc
        except psycopg.Error as exc:
            raise ArkError(ErrorLayer.STORAGE, code, f"{action} in {self._where}: {str(exc).strip()}",
                           Retryability.CONDITIONAL) from exc

    def _attempt(self, work: Callable[..., _T], args: tuple, kwargs: dict) -> _T:
        import psycopg  # noqa: PLC0415

        self._answered = False
        try:
            return work(*args, **kwargs)
        except psycopg.OperationalError:
            self._shutdown()
            raise

    def _may_retry(self) -> bool:
        """True if the failed call may be made again: the server answered no statement of
        its write transaction (a read is always safe), so the connection died while it sat
        idle (a server restart, ``idle_session_timeout``, a killed backend) or before it
        answered anything: nothing of the call was committed. A connection lost after the
        server answered (a transaction killed while it ran, a COMMIT under way) fails the
        call: it may have been killed on purpose, or the commit may have landed."""
        return not self._answered

    def _begin_write(self, conn: Any) -> None:
        """The first statement of a write transaction: the layout check. From its answer on,
        the connection was alive, and a loss is not retried."""
        _sql.check_layout(conn, _sql.POSTGRES, PG_LAYOUT_VERSION, self._where)
        self._answered = True

    @contextlib.contextmanager
    def _connection(self):
        if self._pool is not None:
            with self._pool.connection() as conn:
                conn.autocommit = True
                self._check_layout(conn)
                yield conn
            return
        if self._conn is None or self._conn.closed:
            import psycopg  # noqa: PLC0415

            self._conn = psycopg.connect(self._dsn, autocommit=True)
        self._check_layout(self._conn)
        yield self._conn

    def _check_layout(self, conn: Any) -> None:
        if self._checked:
            return
        version = _layout_version(conn, self._where)
        if version < PG_LAYOUT_VERSION:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                version = _layout_version(conn, self._where)  # another kernel may have got here first
                for step in PG_LAYOUT_STEPS[version:]:
                    for statement in step:
                        conn.execute(statement)
                conn.execute("INSERT INTO store_meta (key, value) VALUES ('layout_version', %s) ON CONFLICT (key) "
                             "DO UPDATE SET value = excluded.value", (str(PG_LAYOUT_VERSION),))
        self._checked = True

    def _read(self, work: Callable[..., _T], *args: Any) -> _T | None:
        with self._connection() as conn, conn.transaction():
            return work(conn, *args) if work is _sql.list_sessions else work(conn, _sql.POSTGRES, *args)

    def _write_txn(self, work: Callable[..., _T], *args: Any, create: bool = True, sync: bool = True) -> _T | None:
        with self._connection() as conn:
            with conn.transaction():
                self._begin_write(conn)
                if not sync:
                    conn.execute("SET LOCAL synchronous_commit = off")
                result = work(conn, _sql.POSTGRES, *args)
        self.commits += 1
        self.synced_commits += sync
        return result

    def _load(self, session_id: str) -> AgentState | None:
        with self._connection() as conn, conn.transaction():
            return _sql.load_state(conn, _sql.POSTGRES, session_id, self._where, self._written)

    def _commit(self, commit: Commit) -> int | None:
        with self._connection() as conn:
            with conn.transaction():
                self._begin_write(conn)
                if not commit.sync:
                    conn.execute("SET LOCAL synchronous_commit = off")
                written = _sql.write_commit(conn, _sql.POSTGRES, commit, time.time(), self._written, self._where)
        return self._committed(commit, written)

    def _shutdown(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None
        self._checked = False


def _layout_version(conn: Any, where: str) -> int:
    tables = {row[0] for row in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").fetchall()}
    if "store_meta" not in tables:
        if tables & _OURS:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                           f"{where} is not an arknb database: it holds {', '.join(sorted(tables & _OURS))} but no "
                           "store_meta table; it was left untouched (use another database or schema)")
        return 0
    row = conn.execute("SELECT value FROM store_meta WHERE key = 'layout_version'").fetchone()
    try:
        version = int(row[0]) if row is not None else None
    except (TypeError, ValueError):
        version = None
    if version is None or version < 1:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                       f"{where} is not an arknb database: its store_meta has no valid layout_version ({row!r}); "
                       "it was left untouched")
    if version > PG_LAYOUT_VERSION:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STORE_VERSION_UNSUPPORTED,
                       f"{where} has layout version {version}, but this arknb reads versions up to "
                       f"{PG_LAYOUT_VERSION}; upgrade arknb to open it (the database was left untouched)")
    return version


def _describe(dsn: str) -> str:
    """The DSN without its password (it is named in errors)."""
    try:
        from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415

        parts = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - describing must never fail
        return "(connection string)"
    parts.pop("password", None)
    return " ".join(f"{k}={v}" for k, v in sorted(parts.items()))
