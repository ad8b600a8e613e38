"""MemoryStore: a durable store that lives in memory, for tests and for the pipeline's own checks.

It keeps every rule of the real stores (one commit is all or nothing, revision
compare-and-swap, append-only outbox, leases with generations) but not the data across
a process: a kernel that dies loses it. Values are kept as JSON text, so a round trip
is as real as on disk.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from arknb.domain import invalid_argument
from arknb.events import AgentEvent
from arknb.state import AgentState, validate_session_id

from .operation import Operation
from .store import DEFAULT_LEASE_TTL, Commit, Lease, check_ttl as _check_ttl, lease_lost, owner_is_dead, session_locked, state_conflict
from ._outbox import event_from_json, event_to_json

__all__ = ["MemoryStore"]


class MemoryStore:
    """A :class:`~arknb.state.StateStorage` and :class:`~arknb.durable.OperationStore` in memory.

    Example:
        >>> store = MemoryStore()
        >>> runtime = AgentRuntime(model, storage=store)   # doctest: +SKIP
    """

    def __init__(self, *, clock: Callable[[], float] | None = None, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self._clock = clock or time.time
        self.lease_ttl = _check_ttl(lease_ttl)
        self._states: dict[str, tuple[str, int]] = {}         # session -> (state JSON, revision)
        self._not_resumable: set[str] = set()
        self._operations: dict[str, str] = {}                  # operation id -> JSON
        self._by_purpose: dict[tuple[str, str], str] = {}      # (session, purpose) -> operation id
        self._order: dict[str, list[str]] = {}                 # session -> operation ids, in order begun
        self._events: dict[str, list[tuple[int, str]]] = {}    # session -> (sequence, event JSON)
        self._leases: dict[str, Lease] = {}
        self._generations: dict[str, int] = {}
        self._lock = asyncio.Lock()
        self.commits = 0
        """How many commits were written (for tests that count them)."""

    # -- StateStorage ----------------------------------------------------------------

    async def load(self, session_id: str) -> AgentState | None:
        """The saved state, or None; a session only marked not resumable loads as an empty marked state."""
        validate_session_id(session_id)
        saved = self._states.get(session_id)
        marked = session_id in self._not_resumable
        if saved is None:
            return AgentState(session_id=session_id, not_resumable=True) if marked else None
        state = AgentState.from_json(saved[0], source=f"session {session_id!r} (memory)")
        state = state.model_copy(update={"revision": saved[1]})
        return state.model_copy(update={"not_resumable": True}) if marked else state

    async def save(self, state: AgentState) -> int:
        """Save ``state`` if the stored revision is ``state.revision``; returns the new revision."""
        if not isinstance(state, AgentState):
            raise invalid_argument(f"save expects an AgentState, got {type(state).__name__}")
        revision = await self.commit(Commit(session_id=state.session_id, state=state))
        assert revision is not None
        return revision

    async def mark_not_resumable(self, session_id: str) -> None:
        """Mark the session not resumable without reading its state."""
        validate_session_id(session_id)
        self._not_resumable.add(session_id)

    async def delete(self, session_id: str) -> None:
        """Forget the session: state, operations and outbox (its lease, who owns it, stays)."""
        validate_session_id(session_id)
        self._states.pop(session_id, None)
        self._not_resumable.discard(session_id)
        for operation_id in self._order.pop(session_id, []):
            self._operations.pop(operation_id, None)
        self._by_purpose = {k: v for k, v in self._by_purpose.items() if k[0] != session_id}
        self._events.pop(session_id, None)

    async def list_sessions(self) -> list[str]:
        """The saved or marked session ids, sorted."""
        return sorted(self._states.keys() | self._not_resumable)

    # -- OperationStore ---------------------------------------------------------------

    async def commit(self, commit: Commit) -> int | None:
        """Write the commit at once: everything is checked before anything is written."""
        session_id = validate_session_id(commit.session_id)
        async with self._lock:
            if commit.lease is not None:
                self._check_lease(commit.lease)
            revision = None
            if commit.state is not None:
                if commit.state.session_id != session_id:
                    raise invalid_argument("a commit's state must belong to its session")
                stored = self._states.get(session_id, (None, 0))[1]
                expected = commit.state.revision if commit.base_revision is None else commit.base_revision
                if stored != expected:
                    raise state_conflict(session_id, expected, stored, repr(self))
                revision = commit.state.revision + 1
                text = commit.state.to_json()
            encoded = [(op, op.to_json()) for op in commit.operations]
            events = [(event.sequence, event_to_json(event)) for event in commit.events]
            # -- all checks passed: write
            if revision is not None:
                self._states[session_id] = (text, revision)
                self._not_resumable.discard(session_id)
            order = self._order.setdefault(session_id, [])
            for op, body in encoded:
                if op.operation_id not in self._operations:
                    order.append(op.operation_id)
                    self._by_purpose[(session_id, op.purpose_key)] = op.operation_id
                ordinal = order.index(op.operation_id) + 1
                self._operations[op.operation_id] = body if op.ordinal == ordinal else \
                    op.model_copy(update={"ordinal": ordinal}).to_json()
            if events:
                outbox = self._events.setdefault(session_id, [])
                last = outbox[-1][0] if outbox else 0
                outbox.extend(item for item in events if item[0] > last)
            self.commits += 1
            return revision

    async def get_operation(self, operation_id: str) -> Operation | None:
        """The operation with that id, or None."""
        body = self._operations.get(operation_id)
        return Operation.from_json(body) if body is not None else None

    async def find_operation(self, session_id: str, purpose_key: str) -> Operation | None:
        """The session's operation with ``purpose_key``, or None."""
        operation_id = self._by_purpose.get((session_id, purpose_key))
        return await self.get_operation(operation_id) if operation_id is not None else None

    async def list_operations(self, session_id: str, run_id: str | None = None) -> list[Operation]:
        """The session's operations in the order they began."""
        ops = [Operation.from_json(self._operations[i]) for i in self._order.get(session_id, [])]
        return [op for op in ops if run_id is None or op.run_id == run_id]

    async def read_events(self, session_id: str, after_sequence: int | None = None,
                          limit: int | None = None) -> list[AgentEvent]:
        """The session's outbox in sequence order."""
        rows = [body for sequence, body in self._events.get(session_id, [])
                if after_sequence is None or sequence > after_sequence]
        if limit is not None:
            rows = rows[:max(0, limit)]
        return [event_from_json(body) for body in rows]

    async def read_events_before(self, session_id: str, before_sequence: int | None = None, *,
                                 limit: int) -> list[AgentEvent]:
        """The newest ``limit`` outbox events below ``before_sequence`` (of all, when None), oldest first."""
        rows = [body for sequence, body in self._events.get(session_id, [])
                if before_sequence is None or sequence < before_sequence]
        return [event_from_json(body) for body in rows[-limit:]] if limit > 0 else []

    async def acquire_lease(self, session_id: str, owner: str, *, ttl: float = DEFAULT_LEASE_TTL,
                            takeover: bool = False) -> Lease:
        """Take the lease (see :meth:`OperationStore.acquire_lease`)."""
        validate_session_id(session_id)
        async with self._lock:
            now = self._clock()
            held = self._leases.get(session_id)
            generation = self._generations.get(session_id, 0)
            if held is not None and held.owner != owner and held.expires_at > now and not owner_is_dead(held.owner):
                if not takeover:
                    raise session_locked(session_id, held, now)
            if held is None or held.owner != owner:
                generation += 1
            lease = Lease(session_id, owner, generation, now + ttl)
            self._leases[session_id] = lease
            self._generations[session_id] = generation
            return lease

    async def renew_lease(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend the lease, or raise ``lease_lost``."""
        async with self._lock:
            self._check_lease(lease)
            renewed = Lease(lease.session_id, lease.owner, lease.generation, self._clock() + ttl)
            self._leases[lease.session_id] = renewed
            return renewed

    async def release_lease(self, lease: Lease) -> None:
        """Give the lease up if it is still ours."""
        async with self._lock:
            held = self._leases.get(lease.session_id)
            if held is not None and held.owner == lease.owner and held.generation == lease.generation:
                del self._leases[lease.session_id]

    def _check_lease(self, lease: Lease) -> None:
        held = self._leases.get(lease.session_id)
        generation = self._generations.get(lease.session_id, 0)
        if generation != lease.generation or (held is not None and held.owner != lease.owner):
            raise lease_lost(lease.session_id, lease, held.owner if held else None, generation)

    def invocations_for(self, scope: Any) -> Any:
        """The runtime seam that makes a runtime's calls operations of this store (called by
        ``AgentRuntime``; see :mod:`arknb.durable.runtime_seam`)."""
        from .runtime_seam import DurableInvocations  # noqa: PLC0415 - the seam needs the bus

        return DurableInvocations(self, scope, lease_ttl=self.lease_ttl)

    def __repr__(self) -> str:
        return f"MemoryStore(sessions={len(self._states)}, operations={len(self._operations)})"

