"""The durable database file: opening it, its layout, and the layout's version.

Every durable table of arknb lives in one SQLite file. The ``store_meta`` table holds
the layout version (key ``layout_version``). :data:`LAYOUT_STEPS` lists, per version,
the statements that lift a database from the version before: a new file runs them
all, an older file runs only the missing ones (seed 004's operation tables arrived as
step 2, session incarnations as step 3, row tables for operations and events as step 4),
and a file from a newer arknb is refused (``store_version_unsupported``) before anything
is written to it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from arknb.domain import ArkError, ErrorCode, ErrorLayer

__all__ = ["LAYOUT_STEPS", "LAYOUT_VERSION", "is_damaged", "open_database", "set_synchronous", "transaction"]

LAYOUT_STEPS: tuple[tuple[str, ...], ...] = (
    # 1: the state store (sqlite_store.py): a session row holds the state without its
    # history and usages, and every message and usage is a row of its own, so a save
    # appends instead of rewriting the conversation.
    (
        """CREATE TABLE store_meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) WITHOUT ROWID""",
        """CREATE TABLE sessions (
            session_id    TEXT PRIMARY KEY,
            header        TEXT,              -- the state's JSON without "history" and "usages";
                                             -- NULL: only marked not resumable, never saved
            history_len   INTEGER NOT NULL,  -- rows in messages
            usages_len    INTEGER NOT NULL,  -- rows in usages
            not_resumable INTEGER NOT NULL DEFAULT 0,
            writer        TEXT,              -- token of the store instance that saved last
            version       INTEGER NOT NULL,  -- that instance's save number
            updated_at    REAL NOT NULL
        ) WITHOUT ROWID""",
        """CREATE TABLE messages (
            session_id TEXT NOT NULL,
            idx        INTEGER NOT NULL,
            body       TEXT NOT NULL,        -- one AgentMessage as JSON
            PRIMARY KEY (session_id, idx)
        ) WITHOUT ROWID""",
        """CREATE TABLE usages (
            session_id TEXT NOT NULL,
            idx        INTEGER NOT NULL,
            body       TEXT NOT NULL,        -- one Usage as JSON
            PRIMARY KEY (session_id, idx)
        ) WITHOUT ROWID""",
    ),
    # 2: durable invocation (seed 004): the session row carries the state's revision
    # (saves are a compare-and-swap on it) instead of a writer token; operations, the
    # outbox and leases arrive.
    (
        """CREATE TABLE sessions_v2 (
            session_id    TEXT PRIMARY KEY,
            header        TEXT,              -- the state's JSON without "history" and "usages";
                                             -- NULL: only marked not resumable, never saved
            history_len   INTEGER NOT NULL,  -- rows in messages
            usages_len    INTEGER NOT NULL,  -- rows in usages
            not_resumable INTEGER NOT NULL DEFAULT 0,
            revision      INTEGER NOT NULL DEFAULT 0,  -- bumped by every save
            updated_at    REAL NOT NULL
        ) WITHOUT ROWID""",
        """INSERT INTO sessions_v2 SELECT session_id, header, history_len, usages_len, not_resumable,
               CASE WHEN header IS NULL THEN 0 ELSE 1 END, updated_at FROM sessions""",
        "DROP TABLE sessions",
        "ALTER TABLE sessions_v2 RENAME TO sessions",
        """CREATE TABLE operations (
            operation_id TEXT PRIMARY KEY,
            session_id   TEXT NOT NULL,
            run_id       TEXT NOT NULL,
            purpose_key  TEXT NOT NULL,
            ordinal      INTEGER NOT NULL,   -- the order the session's operations began
            phase        TEXT NOT NULL,
            status       TEXT,
            body         TEXT NOT NULL,      -- the whole Operation as JSON
            updated_at   REAL NOT NULL
        ) WITHOUT ROWID""",
        "CREATE UNIQUE INDEX operations_purpose ON operations (session_id, purpose_key)",
        "CREATE INDEX operations_order ON operations (session_id, ordinal)",
        """CREATE TABLE outbox (
            session_id TEXT NOT NULL,
            sequence   INTEGER NOT NULL,
            event_type TEXT NOT NULL,
            body       TEXT NOT NULL,        -- one AgentEvent as JSON
            PRIMARY KEY (session_id, sequence)
        ) WITHOUT ROWID""",
        """CREATE TABLE leases (
            session_id TEXT PRIMARY KEY,
            owner      TEXT,                 -- host:pid:start:token; NULL once released
            generation INTEGER NOT NULL,     -- bumped by every change of owner
            expires_at REAL NOT NULL
        ) WITHOUT ROWID""",
    ),
    # 3: a session row's incarnation, a random token that is new when the row is created
    # and whenever anything writes the session's message or usage rows (the triggers; a
    # save by arknb puts its own token back in the same transaction), so a process that
    # knows a session's rows (_known_rows.py) never takes a re-created or hand-edited
    # session for the one it knew.
    (
        "ALTER TABLE sessions ADD COLUMN incarnation TEXT",
        "UPDATE sessions SET incarnation = lower(hex(randomblob(16)))",
        # EpisodicMemory(store)'s rows (_episode_rows.py); the same table as a
        # SQLiteEpisodeStore's, which may have made it already.
        """CREATE TABLE IF NOT EXISTS arknb_episodes (position INTEGER PRIMARY KEY AUTOINCREMENT,
            episode_id TEXT UNIQUE NOT NULL, document TEXT NOT NULL)""",
        *(f"""CREATE TRIGGER {table}_{op.lower()} AFTER {op} ON {table} BEGIN
                UPDATE sessions SET incarnation = lower(hex(randomblob(16))) WHERE session_id IN ({rows});
            END"""
          for table in ("messages", "usages")
          for op, rows in (("INSERT", "NEW.session_id"), ("UPDATE", "OLD.session_id, NEW.session_id"),
                           ("DELETE", "OLD.session_id"))),
    ),
    # 4: operations and the outbox become ordinary (rowid) tables. Their rows are JSON
    # documents of one to a few KB; in a WITHOUT ROWID table a row over ~1 KB spills into
    # an overflow page that every phase's update rewrites (SQLite recommends WITHOUT
    # ROWID for small rows only), so each commit wrote a quarter more pages.
    (
        """CREATE TABLE operations_v4 (
            operation_id TEXT PRIMARY KEY,
            session_id   TEXT NOT NULL,
            run_id       TEXT NOT NULL,
            purpose_key  TEXT NOT NULL,
            ordinal      INTEGER NOT NULL,
            phase        TEXT NOT NULL,
            status       TEXT,
            body         TEXT NOT NULL,
            updated_at   REAL NOT NULL
        )""",
        "INSERT INTO operations_v4 SELECT operation_id, session_id, run_id, purpose_key, ordinal, phase, status, "
        "body, updated_at FROM operations",
        "DROP TABLE operations",
        "ALTER TABLE operations_v4 RENAME TO operations",
        "CREATE UNIQUE INDEX operations_purpose ON operations (session_id, purpose_key)",
        "CREATE INDEX operations_order ON operations (session_id, ordinal)",
        """CREATE TABLE outbox_v4 (
            session_id TEXT NOT NULL,
            sequence   INTEGER NOT NULL,
            event_type TEXT NOT NULL,
            body       TEXT NOT NULL,
            PRIMARY KEY (session_id, sequence)
        )""",
        "INSERT INTO outbox_v4 SELECT session_id, sequence, event_type, body FROM outbox",
        "DROP TABLE outbox",
        "ALTER TABLE outbox_v4 RENAME TO outbox",
    ),
)
"""``LAYOUT_STEPS[n]`` lifts a database from layout version ``n`` to ``n + 1``."""

LAYOUT_VERSION: int = len(LAYOUT_STEPS)
"""The layout this arknb writes."""

# A write waits this long for another connection's write lock (another store
# instance or process on the same file) before failing with "database is locked".
_BUSY_TIMEOUT_S = 30.0


def open_database(path: Path, *, any_thread: bool = False) -> sqlite3.Connection:
    """Open (creating if needed) the database at ``path`` and bring its layout up to date.

    The connection is in autocommit mode: callers open their transactions with
    :func:`transaction`. It belongs to the thread that opened it (with ``any_thread``
    any thread may use it; the caller then makes sure only one does at a time).

    Raises:
        ArkError: ``state_corrupt`` if the file is not an arknb database (not SQLite,
            damaged, or another application's tables); ``store_version_unsupported``
            if its layout is newer than :data:`LAYOUT_VERSION`. Either way the file is
            left as it was.
        sqlite3.Error: anything else SQLite refuses (permissions, I/O, locks).
    """
    conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=not any_thread)
    try:
        # Read before any write (the journal mode below rewrites the file header):
        # a file that is not ours, or is newer, must stay byte for byte as it was.
        version = _layout_version(conn, path)
        # WAL: a commit appends to the log and readers keep reading meanwhile.
        # synchronous=FULL: every commit fsyncs the log before it returns, so a save
        # that returned survives a power cut, as FileStateStorage's fsync promises
        # (with NORMAL, WAL keeps consistency but may lose the last commits).
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        if version < LAYOUT_VERSION:
            with transaction(conn, write=True):
                # Again under the write lock: another process may have got here first.
                version = _layout_version(conn, path)
                for step in LAYOUT_STEPS[version:]:
                    for statement in step:
                        conn.execute(statement)
                conn.execute("INSERT INTO store_meta (key, value) VALUES ('layout_version', ?) "
                             "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                             (str(LAYOUT_VERSION),))
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection, *, write: bool) -> Iterator[None]:
    """One transaction: committed if the block ends normally, rolled back otherwise.

    A write transaction starts with ``BEGIN IMMEDIATE``: it takes the write lock at
    once, so what it reads cannot change before it writes.
    """
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the original error says more
                conn.execute("ROLLBACK")
        raise


def set_synchronous(conn: sqlite3.Connection, full: bool) -> None:
    """``synchronous=FULL`` (every commit waits for the disk) or ``NORMAL`` (in WAL mode a
    commit reaches the operating system, so it survives the process being killed, but
    not a power cut, until the next FULL commit syncs the log)."""
    conn.execute("PRAGMA synchronous = FULL" if full else "PRAGMA synchronous = NORMAL")


def is_damaged(exc: sqlite3.Error) -> bool:
    """True if SQLite says the file is not a database or is damaged (retrying cannot help)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _layout_version(conn: sqlite3.Connection, path: Path) -> int:
    """The layout version of the open database; 0 for an empty one."""
    # sqlite_*: SQLite's own; arknb_*: tables other parts of arknb keep in the same file
    # (EpisodicMemory's arknb_episodes), which may be there before the store's first write.
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if not name.startswith(("sqlite_", "arknb_"))}
    if "store_meta" not in tables:
        if tables:
            raise _not_ours(path, f"it holds other tables ({', '.join(sorted(tables)[:5])}) and no "
                                  "store_meta table")
        return 0
    row = conn.execute("SELECT value FROM store_meta WHERE key = 'layout_version'").fetchone()
    try:
        version = int(row[0]) if row is not None else None
    except (TypeError, ValueError):
        version = None
    if version is None or version < 1:
        raise _not_ours(path, f"its store_meta has no valid layout_version ({row!r})")
    if version > LAYOUT_VERSION:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STORE_VERSION_UNSUPPORTED,
                       f"the database {path} has layout version {version}, but this arknb reads "
                       f"versions up to {LAYOUT_VERSION}; upgrade arknb to open it (the file was "
                       "left untouched)")
    return version


def _not_ours(path: Path, detail: str) -> ArkError:
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                    f"{path} is not an arknb database: {detail}; it was left untouched")
