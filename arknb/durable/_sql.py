"""The rows of a durable session, written and read the same way on SQLite and PostgreSQL.

Both backends hold the same tables (``sessions``, ``messages``, ``usages``,
``operations``, ``outbox``, ``leases``; their DDL is per backend) and run these
functions inside a transaction the backend opened: ``sqlite3`` and psycopg 3
connections both offer ``execute(sql, params)`` returning a cursor, and a
:class:`Dialect` supplies what differs (the placeholder, row locks).

A session row holds the state's JSON without its two growing sequences; every message
and every usage is a row of its own, so a save at turn 1,000 appends what is new
instead of rewriting the conversation (the runtime only appends, and its items are
immutable: comparing the tuple this store last wrote costs a pointer comparison per item).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from arknb.domain import ArkError, ErrorCode, ErrorLayer
from arknb.events import AgentEvent
from arknb.state import SCHEMA_VERSION, AgentState
from arknb.state._encoding import APPEND_ONLY_FIELDS, header_json, splice
from arknb.state.agent_state import current_document

from ._known_rows import LocationRows, Written, new_incarnation
from ._outbox import event_from_json, event_to_json
from ._validated_rows import VALIDATED_ROWS
from .operation import Operation
from .store import Commit, Lease, lease_lost, owner_is_dead, session_locked, state_conflict

__all__ = ["Dialect", "Written", "acquire_lease", "append_events", "check_lease", "check_layout", "delete_session",
           "find_operation", "get_operation", "list_operations", "list_sessions", "load_state", "mark_session",
           "read_events", "read_events_before", "release_lease", "renew_lease", "save_state", "write_commit",
           "write_operations"]

_TABLES = {"history": "messages", "usages": "usages"}
SEQUENCES = tuple((field, _TABLES[field]) for field in APPEND_ONLY_FIELDS)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the backends' SQL."""

    ph: str            # the parameter placeholder: "?" or "%s"
    for_update: str    # appended to a SELECT that must lock its row ("" where the transaction locks all)
    name: str
    for_share: str = ""  # appended to a SELECT whose row must not change before the transaction ends

    def q(self, sql: str) -> str:
        """``sql`` written with ``?`` placeholders, in this dialect."""
        return sql if self.ph == "?" else sql.replace("?", self.ph)


SQLITE = Dialect("?", "", "SQLite")
POSTGRES = Dialect("%s", " FOR UPDATE", "PostgreSQL", " FOR SHARE")


def _many(conn: Any, sql: str, rows: list) -> None:
    """``executemany`` on an sqlite3 connection or a psycopg one (which has it on cursors)."""
    if hasattr(conn, "executemany"):
        conn.executemany(sql, rows)
    else:
        with conn.cursor() as cursor:
            cursor.executemany(sql, rows)


def corrupt(where: str, session_id: str, detail: str) -> ArkError:
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                    f"saved state from session {session_id!r} ({where}) is corrupt: {detail}")


# -- the layout under a write --------------------------------------------------------------


def check_layout(conn: Any, d: Dialect, expected: int, where: str) -> None:
    """Refuse to write if the database's layout is no longer the one this store opened:
    a newer arknb upgraded it while this store had it open (issue 26). Run first in every
    write transaction; on PostgreSQL the row is locked against an upgrade (``FOR SHARE``)
    until the transaction ends, on SQLite the write lock already holds it."""
    row = conn.execute(d.q(f"SELECT value FROM store_meta WHERE key = 'layout_version'{d.for_share}")).fetchone()
    found = row[0] if row is not None else None
    if found != str(expected):
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STORE_VERSION_UNSUPPORTED,
                       f"{where} changed layout while this store had it open (layout version {found}, "
                       f"this arknb writes {expected}): nothing of this transaction was written. "
                       "Another program upgraded the database; upgrade arknb and open the store again")


# -- state -------------------------------------------------------------------------------


def load_state(conn: Any, d: Dialect, session_id: str, where: str, cache: LocationRows) -> AgentState | None:
    row = conn.execute(d.q("SELECT header, not_resumable, revision, incarnation, history_len, usages_len "
                           "FROM sessions WHERE session_id = ?"), (session_id,)).fetchone()
    if row is None:
        return None
    header, marked, revision, incarnation, *lengths = row
    if header is None:  # only marked, never saved
        return AgentState(session_id=session_id, not_resumable=True)
    source = f"session {session_id!r} ({where})"
    known = cache.get(session_id)
    state = None
    if known is not None and known.describes(revision, tuple(lengths), header, incarnation) \
            and _last_rows_there(conn, d, session_id, lengths):
        # Unchanged since this process wrote or read it: the (strictly validated, immutable)
        # items it holds are the rows, so none is read. The header is parsed every time; one
        # that is not of this version, or not valid, goes the reading way, which says why.
        state = current_document(header)
    if state is not None:
        sequences = known.sequences
    else:
        state, sequences = _read_state(conn, d, session_id, where, header, lengths, source)
        if known is not None and known.revision == revision and known.sequences == sequences:
            # The rows are what this process last wrote: hand out those very (immutable)
            # items, so the next save appends by pointer comparison.
            sequences = known.sequences
        cache[session_id] = Written(sequences, int(revision), tuple(lengths), header, incarnation)
    if state.session_id != session_id:
        raise corrupt(where, session_id, f"the row holds session {state.session_id!r}")
    updates: dict[str, Any] = dict(zip(APPEND_ONLY_FIELDS, sequences, strict=True))
    updates["revision"] = int(revision)
    if marked:
        updates["not_resumable"] = True
    return state.model_copy(update=updates)


def _last_rows_there(conn: Any, d: Dialect, session_id: str, lengths: list) -> bool:
    """The last row of each sequence is where the session row says (an index lookup per
    table: a dropped table or lost rows send the load the reading way, which names them)."""
    return all(length == 0 or conn.execute(d.q(f"SELECT 1 FROM {table} WHERE session_id = ? AND idx = ?"),
                                           (session_id, length - 1)).fetchone() is not None
               for (_, table), length in zip(SEQUENCES, lengths, strict=True))


def _read_state(conn: Any, d: Dialect, session_id: str, where: str, header: object, lengths: list,
                source: str) -> tuple[AgentState, tuple[tuple[Any, ...], ...]]:
    """The state of the session row's header and its rows, read and validated."""
    bodies = []
    for (_, table), length in zip(SEQUENCES, lengths, strict=True):
        rows = conn.execute(d.q(f"SELECT idx, body FROM {table} WHERE session_id = ? ORDER BY idx"),
                            (session_id,)).fetchall()
        bodies.append(_check_rows(where, session_id, table, length, rows))
    if not isinstance(header, str):
        raise corrupt(where, session_id, f"its header is {type(header).__name__}, not text")
    state = _parse_state(header, bodies, source)
    return state, tuple(getattr(state, field) for field in APPEND_ONLY_FIELDS)


def _parse_state(header: str, bodies: list[list[str]], source: str) -> AgentState:
    """The state of a header and its rows, validated as strictly as a whole document.

    The header (small) is parsed by ``AgentState.from_json`` every time. The rows are
    items this process already validated from the same text, or are validated alone
    (``VALIDATED_ROWS``), so a restore at turn 1,000 does not validate the whole
    conversation again. A header of an older schema version (migrations see the whole
    document) or a row that fails alone goes the whole document's way: the header with
    the sequences spliced in, parsed by ``from_json``, whose errors name the field.
    """
    # A current header is read in one parse (no json.loads just for its version); one the
    # one-parse way does not take is read as before, which raises what is wrong with it.
    base = current_document(header)
    if base is None and _current_version(header):
        base = AgentState.from_json(header, source=source)
    if base is not None:
        items = [VALIDATED_ROWS.items(field, rows) if rows else ()
                 for field, rows in zip(APPEND_ONLY_FIELDS, bodies, strict=True)]
        if all(found is not None for found in items):
            return base.model_copy(update=dict(zip(APPEND_ONLY_FIELDS, items, strict=True)))
    # An empty sequence is left out (same default).
    present = [(field, rows) for field, rows in zip(APPEND_ONLY_FIELDS, bodies, strict=True) if rows]
    state = AgentState.from_json(splice(header, present), source=source)
    for field, rows in present:
        VALIDATED_ROWS.remember(field, rows, getattr(state, field))
    return state


def _current_version(header: str) -> bool:
    """True if the header says it is of this arknb's schema version (no migration runs)."""
    try:
        version = json.loads(header).get("schema_version", 1)
    except (ValueError, AttributeError, RecursionError):
        return False  # the whole document's parse says what is wrong
    return type(version) is int and version == SCHEMA_VERSION


def _check_rows(where: str, session_id: str, table: str, length: object, rows: list) -> list[str]:
    if type(length) is not int or len(rows) != length:
        raise corrupt(where, session_id, f"{table}: expected {length!r} rows, found {len(rows)}")
    for expected, (idx, body) in enumerate(rows):
        if idx != expected:
            raise corrupt(where, session_id, f"{table}: row {expected} is missing (the rows jump to idx {idx!r})")
        if not isinstance(body, str):
            raise corrupt(where, session_id, f"{table}: row {idx} is {type(body).__name__}, not text")
    return [body for _, body in rows]


def save_state(conn: Any, d: Dialect, state: AgentState, now: float, cache: LocationRows, where: str,
               base: int | None = None) -> Written:
    """Write ``state`` with revision ``state.revision + 1`` if the stored revision is
    ``base`` (default ``state.revision``); returns what is now stored (the caller puts it
    in ``cache`` once the transaction committed). A stored state this arknb cannot read,
    or one a newer arknb wrote, is never overwritten."""
    session_id = state.session_id
    expected = state.revision if base is None else base
    row = conn.execute(d.q(f"SELECT revision, history_len, usages_len, header, incarnation FROM sessions "
                           f"WHERE session_id = ?{d.for_update}"), (session_id,)).fetchone()
    stored = int(row[0]) if row is not None and row[3] is not None else 0
    known = cache.get(session_id)
    if row is not None and row[3] is not None and (known is None or row[3] != known.header):
        _check_writable(row[3], session_id, where)  # (a header this instance wrote or read is readable)
    if stored != expected:
        raise state_conflict(session_id, expected, stored, where)
    sequences = tuple(getattr(state, field) for field in APPEND_ONLY_FIELDS)
    incarnation = row[4] if row is not None and row[4] is not None else new_incarnation()
    # Append only to rows this process knows: the incarnation, revision and lengths must
    # be the ones it last wrote or loaded.
    if known is not None and row is not None and known.revision == stored and known.lengths == tuple(row[1:3]) \
            and known.incarnation == incarnation:
        written: tuple = known.sequences
    else:
        written = (None,) * len(SEQUENCES)
    for (_, table), items, before in zip(SEQUENCES, sequences, written, strict=True):
        _write_rows(conn, d, table, session_id, items, before)
    revision = state.revision + 1
    lengths = tuple(map(len, sequences))
    conn.execute(d.q(
        "INSERT INTO sessions (session_id, header, history_len, usages_len, not_resumable, revision, updated_at, "
        "incarnation) VALUES (?, ?, ?, ?, 0, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET header = excluded.header, "
        "history_len = excluded.history_len, usages_len = excluded.usages_len, not_resumable = 0, "
        "revision = excluded.revision, updated_at = excluded.updated_at, incarnation = excluded.incarnation"),
        (session_id, header := header_json(state.model_copy(update={"revision": revision})), *lengths, revision, now,
         incarnation))
    return Written(sequences, revision, lengths, header, incarnation)


def _check_writable(header: object, session_id: str, where: str) -> None:
    """Refuse to overwrite a stored header that a load would refuse: not a state, written by
    a newer arknb, or edited into one this arknb does not read (an unknown field, a wrong
    type). Read as strictly as a load; the header is small, so this costs microseconds, not
    the history's milliseconds."""
    try:
        if not isinstance(header, str):
            raise corrupt(where, session_id, f"its header is {type(header).__name__}, not text")
        AgentState.from_json(header, source=f"session {session_id!r} ({where})")
    except ArkError as exc:
        raise ArkError(exc.layer, exc.code, f"{exc.message}; the save was refused, so it stays as it is (fix it, "
                       "or delete the session to start over: storage.delete(...) or AgentRuntime(..., fresh=True))",
                       exc.retryability) from None


def _write_rows(conn: Any, d: Dialect, table: str, session_id: str, items: tuple[Any, ...],
                written: tuple[Any, ...] | None) -> None:
    """Bring ``table``'s rows of the session in line with ``items``, given the items the
    rows are known to hold (None: unknown, so they are all replaced)."""
    kept = 0 if written is None else _kept_rows(items, written)
    if written is None or kept < len(written):
        conn.execute(d.q(f"DELETE FROM {table} WHERE session_id = ? AND idx >= ?"), (session_id, kept))
    if kept < len(items):
        _many(conn, d.q(f"INSERT INTO {table} (session_id, idx, body) VALUES (?, ?, ?)"),
                         [(session_id, i, items[i].model_dump_json()) for i in range(kept, len(items))])


def _kept_rows(items: tuple[Any, ...], written: tuple[Any, ...]) -> int:
    """How many leading ``items`` equal the ones written: their rows stay (a pointer
    comparison per item when the runtime carried them over, as it does)."""
    n = min(len(items), len(written))
    if items[:n] == written[:n]:
        return n
    return next(i for i, (a, b) in enumerate(zip(items, written, strict=False)) if a is not b and a != b)


def mark_session(conn: Any, d: Dialect, session_id: str, now: float) -> None:
    # Only the column: the header and items may be unreadable and stay as they are.
    updated = conn.execute(d.q("UPDATE sessions SET not_resumable = 1 WHERE session_id = ?"), (session_id,)).rowcount
    if not updated:
        conn.execute(d.q("INSERT INTO sessions (session_id, header, history_len, usages_len, not_resumable, "
                         "revision, updated_at, incarnation) VALUES (?, NULL, 0, 0, 1, 0, ?, ?)"),
                     (session_id, now, new_incarnation()))


def delete_session(conn: Any, d: Dialect, session_id: str) -> None:
    # The lease stays: deleting a session's data (fresh=True) does not end its owner's ownership.
    for table in ("messages", "usages", "operations", "outbox", "sessions"):
        conn.execute(d.q(f"DELETE FROM {table} WHERE session_id = ?"), (session_id,))


def list_sessions(conn: Any) -> list[str]:
    return [row[0] for row in conn.execute("SELECT session_id FROM sessions").fetchall()]


# -- operations and the outbox ------------------------------------------------------------------


def write_operations(conn: Any, d: Dialect, session_id: str, operations: tuple[Operation, ...]) -> None:
    if not operations:
        return
    rows = []
    for operation in operations:
        if operation.session_id != session_id:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"operation {operation.operation_id} belongs to session {operation.session_id!r}, "
                           f"not {session_id!r}")
        rows.append((operation.operation_id, session_id, operation.run_id, operation.purpose_key,
                     operation.ordinal or None, session_id, operation.phase.value,
                     operation.status.value if operation.status else None, operation.to_json(), operation.updated_at))
    # A new operation (ordinal 0) is numbered after the session's last one by the statement
    # itself (no query and no copy per commit; the rows of one statement are numbered in
    # turn). The ordinal is kept from the first insert: an update never moves an operation
    # in the order. The body's own ordinal may differ; reads take the column's.
    _many(conn, d.q(
        "INSERT INTO operations (operation_id, session_id, run_id, purpose_key, ordinal, phase, status, body, "
        "updated_at) VALUES (?, ?, ?, ?, COALESCE(?, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM operations "
        "WHERE session_id = ?)), ?, ?, ?, ?) ON CONFLICT (operation_id) DO UPDATE SET "
        "phase = excluded.phase, status = excluded.status, body = excluded.body, updated_at = excluded.updated_at"),
        rows)


def _operation(row: Any, where: str) -> Operation:
    body, ordinal = row
    try:
        operation = Operation.from_json(body)
    except ValueError as exc:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                       f"an operation row in {where} is corrupt: {str(exc).splitlines()[0]}") from None
    return operation if operation.ordinal == ordinal else operation.model_copy(update={"ordinal": ordinal})


def get_operation(conn: Any, d: Dialect, operation_id: str, where: str) -> Operation | None:
    row = conn.execute(d.q("SELECT body, ordinal FROM operations WHERE operation_id = ?"), (operation_id,)).fetchone()
    return _operation(row, where) if row is not None else None


def find_operation(conn: Any, d: Dialect, session_id: str, purpose_key: str, where: str) -> Operation | None:
    row = conn.execute(d.q("SELECT body, ordinal FROM operations WHERE session_id = ? AND purpose_key = ?"),
                       (session_id, purpose_key)).fetchone()
    return _operation(row, where) if row is not None else None


def list_operations(conn: Any, d: Dialect, session_id: str, run_id: str | None, where: str) -> list[Operation]:
    if run_id is None:
        rows = conn.execute(d.q("SELECT body, ordinal FROM operations WHERE session_id = ? ORDER BY ordinal"),
                            (session_id,)).fetchall()
    else:
        rows = conn.execute(d.q("SELECT body, ordinal FROM operations WHERE session_id = ? AND run_id = ? "
                                "ORDER BY ordinal"), (session_id, run_id)).fetchall()
    return [_operation(row, where) for row in rows]


def append_events(conn: Any, d: Dialect, session_id: str, events: tuple[AgentEvent, ...]) -> None:
    if events:
        # A sequence already in the outbox is the same event sent again: kept once.
        _many(conn, d.q("INSERT INTO outbox (session_id, sequence, event_type, body) VALUES (?, ?, ?, ?) "
                             "ON CONFLICT DO NOTHING"),
                         [(session_id, e.sequence, e.type, event_to_json(e)) for e in events])


def read_events(conn: Any, d: Dialect, session_id: str, after: int | None, limit: int | None) -> list[AgentEvent]:
    sql = "SELECT body FROM outbox WHERE session_id = ? AND sequence > ? ORDER BY sequence"
    params: tuple = (session_id, -1 if after is None else after)
    if limit is not None:
        sql += " LIMIT ?"
        params += (max(0, limit),)
    return [event_from_json(body) for (body,) in conn.execute(d.q(sql), params).fetchall()]


def read_events_before(conn: Any, d: Dialect, session_id: str, before: int | None, limit: int) -> list[AgentEvent]:
    """The newest ``limit`` events below ``before`` (all when None), oldest first: read
    backwards along the primary key, so a page costs the same at any session length."""
    if before is None:
        sql, params = "SELECT body FROM outbox WHERE session_id = ? ORDER BY sequence DESC LIMIT ?", (session_id,)
    else:
        sql, params = ("SELECT body FROM outbox WHERE session_id = ? AND sequence < ? ORDER BY sequence DESC LIMIT ?",
                       (session_id, before))
    rows = conn.execute(d.q(sql), (*params, max(0, limit))).fetchall()
    return [event_from_json(body) for (body,) in reversed(rows)]


# -- one commit -------------------------------------------------------------------------------


def write_commit(conn: Any, d: Dialect, commit: Commit, now: float, cache: LocationRows,
                 where: str) -> Written | None:
    """Everything of ``commit``, inside the transaction the caller opened: the lease check
    first (a stale one writes nothing), then the state, the operations and the events.
    Returns what is now stored of the state (None if the commit carried none)."""
    if commit.lease is not None:
        check_lease(conn, d, commit.lease)
    written = None
    if commit.state is not None:
        if commit.state.session_id != commit.session_id:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT, "a commit's state must belong to its session")
        written = save_state(conn, d, commit.state, now, cache, where, commit.base_revision)
    write_operations(conn, d, commit.session_id, commit.operations)
    append_events(conn, d, commit.session_id, commit.events)
    return written


# -- leases -----------------------------------------------------------------------------------


def _lease_row(conn: Any, d: Dialect, session_id: str) -> tuple | None:
    return conn.execute(d.q(f"SELECT owner, generation, expires_at FROM leases WHERE session_id = ?{d.for_update}"),
                        (session_id,)).fetchone()


def check_lease(conn: Any, d: Dialect, lease: Lease) -> None:
    row = _lease_row(conn, d, lease.session_id)
    if row is None or row[0] != lease.owner or row[1] != lease.generation:
        raise lease_lost(lease.session_id, lease, row[0] if row else None, row[1] if row else None)


def acquire_lease(conn: Any, d: Dialect, session_id: str, owner: str, ttl: float, takeover: bool,
                  now: float) -> Lease:
    row = _lease_row(conn, d, session_id)
    if row is None:
        lease = Lease(session_id, owner, 1, now + ttl)
        conn.execute(d.q("INSERT INTO leases (session_id, owner, generation, expires_at) VALUES (?, ?, ?, ?)"),
                     (session_id, owner, 1, lease.expires_at))
        return lease
    held_by, generation, expires_at = row
    if held_by == owner:
        lease = Lease(session_id, owner, generation, now + ttl)
    else:
        live = held_by is not None and expires_at > now and not owner_is_dead(held_by)
        if live and not takeover:
            raise session_locked(session_id, Lease(session_id, held_by, generation, expires_at), now)
        lease = Lease(session_id, owner, generation + 1, now + ttl)
    conn.execute(d.q("UPDATE leases SET owner = ?, generation = ?, expires_at = ? WHERE session_id = ?"),
                 (owner, lease.generation, lease.expires_at, session_id))
    return lease


def renew_lease(conn: Any, d: Dialect, lease: Lease, ttl: float, now: float) -> Lease:
    check_lease(conn, d, lease)
    renewed = Lease(lease.session_id, lease.owner, lease.generation, now + ttl)
    conn.execute(d.q("UPDATE leases SET expires_at = ? WHERE session_id = ?"), (renewed.expires_at, lease.session_id))
    return renewed


def release_lease(conn: Any, d: Dialect, lease: Lease) -> None:
    # The row stays with its generation, so a stale owner's later commit still fails.
    conn.execute(d.q("UPDATE leases SET owner = NULL, expires_at = 0 WHERE session_id = ? AND owner = ? "
                     "AND generation = ?"), (lease.session_id, lease.owner, lease.generation))
