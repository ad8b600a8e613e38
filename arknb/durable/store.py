"""The operation store protocol: what a durable store offers beyond ``StateStorage``.

A durable store (``SQLiteStore``, ``PostgresStore``, :class:`~arknb.durable.MemoryStore`)
is a :class:`~arknb.state.StateStorage` and an :class:`OperationStore`. Its one write is
:meth:`OperationStore.commit`: a :class:`Commit` carries a session's new state, the
operations that changed and the events they caused, and the store writes them in one
transaction, so after a crash either all of them are there or none (DESIGN §13).

Ownership is a :class:`Lease` per session: a commit names the lease it was made under,
and a commit under a generation that is no longer current fails with ``lease_lost``
without writing anything.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from arknb.domain import ArkError, ErrorCode, ErrorLayer
from arknb.events import AgentEvent
from arknb.state import AgentState
from arknb.state.storage import state_conflict

from .operation import Operation

__all__ = ["Commit", "DEFAULT_LEASE_TTL", "Lease", "OperationStore", "is_durable_store", "new_owner_id",
           "owner_is_dead", "session_locked", "lease_lost", "state_conflict", "check_ttl"]

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease lives without renewal (DESIGN §13's default ``lease_ttl``)."""


@dataclass(frozen=True, slots=True)
class Lease:
    """The right to write one session, held by one owner until it expires or is taken over.

    Attributes:
        session_id: the session.
        owner: ``host:pid:start:token`` of the holder (see :func:`new_owner_id`).
        generation: bumped by every takeover; commits compare it.
        expires_at: seconds since the epoch; renewed while the owner is open.
    """

    session_id: str
    owner: str
    generation: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class Commit:
    """One transaction of a durable session.

    Attributes:
        session_id: the session written.
        state: the new state, saved only if the stored revision equals ``state.revision``
            (else ``state_conflict``); None leaves the state as it is.
        operations: operations to insert or replace.
        events: events to append to the outbox (in sequence order).
        lease: checked inside the transaction; a stale generation raises ``lease_lost``.
        base_revision: the stored revision the state replaces (default ``state.revision``);
            the state is stored as revision ``state.revision + 1``. A runtime seam that
            held back saves passes the revision it last committed.
        sync: wait for the disk (fsync) before returning. False still survives the
            process being killed (the write reached the operating system), not a power
            cut: used for records a restore can do without (a model call's ``executing``).
    """

    session_id: str
    state: AgentState | None = None
    operations: tuple[Operation, ...] = ()
    events: tuple[AgentEvent, ...] = ()
    lease: Lease | None = None
    sync: bool = True
    base_revision: int | None = None


@runtime_checkable
class OperationStore(Protocol):
    """Operations, the outbox and leases of durable sessions (DESIGN §13). Every method is async."""

    async def commit(self, commit: Commit) -> int | None:
        """Write ``commit`` in one transaction; returns the new state revision if it saved a state.

        Raises:
            ArkError: ``lease_lost`` (the lease's generation is no longer current),
                ``state_conflict`` (the stored revision moved), ``state_save_failed``.
                Nothing of the commit is written then.
        """
        ...

    async def get_operation(self, operation_id: str) -> Operation | None:
        """The operation with that id, or None."""
        ...

    async def find_operation(self, session_id: str, purpose_key: str) -> Operation | None:
        """The session's operation with ``purpose_key``, or None."""
        ...

    async def list_operations(self, session_id: str, run_id: str | None = None) -> list[Operation]:
        """The session's operations (of one run, if given) in the order they began."""
        ...

    async def read_events(self, session_id: str, after_sequence: int | None = None,
                          limit: int | None = None) -> list[AgentEvent]:
        """The session's outbox events in sequence order, after ``after_sequence``, at most ``limit``.

        A store may also offer ``read_events_before(session_id, before_sequence=None, *,
        limit)``: the newest ``limit`` events below ``before_sequence``, oldest first
        (arknb's stores do). ``TimelineWidget(runtime)`` then reads a page of a long
        session at the cost of that page; without it, it reads forward to find the page.
        """
        ...

    async def acquire_lease(self, session_id: str, owner: str, *, ttl: float = DEFAULT_LEASE_TTL,
                            takeover: bool = False) -> Lease:
        """Take the session's lease.

        Free when nobody holds it, when it expired, when its holder is this owner, or
        when its holder was a process on this host that no longer exists.

        Raises:
            ArkError: ``session_locked`` naming the live holder, unless ``takeover``,
                which bumps the generation instead.
        """
        ...

    async def renew_lease(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend the lease. Raises ``lease_lost`` if another owner took it over."""
        ...

    async def release_lease(self, lease: Lease) -> None:
        """Give the lease up (nothing happens if it was already taken over)."""
        ...


def is_durable_store(storage: object) -> bool:
    """True if ``storage`` is an :class:`OperationStore` (so calls become operations)."""
    return isinstance(storage, OperationStore)


_HOST = socket.gethostname()


def _process_start(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks since boot ('' if unknown), so a
    recycled pid is not mistaken for the owner it replaced."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def new_owner_id() -> str:
    """A fresh owner id: ``host:pid:process-start:random token``."""
    pid = os.getpid()
    return f"{_HOST}:{pid}:{_process_start(pid)}:{secrets.token_hex(6)}"


def owner_is_dead(owner: str) -> bool:
    """True if ``owner`` was a process on this host that no longer runs.

    An owner on another host, or one whose id cannot be read, is presumed alive: only
    its lease's expiry frees it.
    """
    parts = owner.split(":")
    if len(parts) != 4 or parts[0] != _HOST:
        return False
    try:
        pid = int(parts[1])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, owned by someone else
        pass
    start = _process_start(pid)
    return bool(parts[2]) and bool(start) and start != parts[2]


def session_locked(session_id: str, lease: Lease, now: float) -> ArkError:
    """The ``session_locked`` error for a live holder."""
    return ArkError(ErrorLayer.STORAGE, ErrorCode.SESSION_LOCKED,
                    f"session {session_id!r} is held by another live owner ({lease.owner}, generation "
                    f"{lease.generation}, lease valid for {max(0.0, lease.expires_at - now):.0f} s more); "
                    "close that runtime (runtime.aclose()) or restore with takeover=True")


def lease_lost(session_id: str, lease: Lease, current: str | None, generation: int | None) -> ArkError:
    """The ``lease_lost`` error for a commit under a stale lease."""
    holder = f"{current} (generation {generation})" if current else "nobody"
    return ArkError(ErrorLayer.STORAGE, ErrorCode.LEASE_LOST,
                    f"session {session_id!r}: this runtime's lease (generation {lease.generation}) was taken "
                    f"over; it is now held by {holder}, so nothing was written. Restore the session to go on")


def check_ttl(ttl: object) -> float:
    """``ttl`` as seconds, or ``invalid_argument``."""
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
        raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                       f"lease_ttl must be a positive number of seconds, got {ttl!r}")
    return float(ttl)
