"""What the SQL stores share: the public methods of a durable store over :mod:`._sql` rows.

:class:`RowStore` implements :class:`~arknb.state.StateStorage` and
:class:`~arknb.durable.OperationStore` once; a backend (``SQLiteStore``,
``PostgresStore``) supplies how work reaches its database: ``_call`` (run a function
off the event loop, mapping its errors), ``_read`` (a read-only transaction),
``_write_txn`` (a write transaction) and ``_load`` / ``_commit``.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, TypeVar

from arknb.domain import ArkError, ErrorCode, ErrorLayer, invalid_argument
from arknb.domain.threads import WorkerThreads
from arknb.events import AgentEvent
from arknb.state import AgentState, validate_session_id

from . import _sql
from ._episode_rows import EpisodeRows
from ._known_rows import LocationRows
from .operation import Operation
from .store import DEFAULT_LEASE_TTL, Commit, Lease

__all__ = ["RowStore"]

_T = TypeVar("_T")


class RowStore:
    """The durable store API over the shared rows (see the module docstring)."""

    lease_ttl: float = DEFAULT_LEASE_TTL
    _where: str
    _written: LocationRows  # what this process knows of the database's rows
    commits: int
    synced_commits: int

    _worker: WorkerThreads   # the one thread that owns the connection
    _closed: bool

    def _guarded(self, code: ErrorCode, action: str, work: Callable[..., _T], args: tuple, kwargs: dict) -> _T:
        """Run ``work`` in the worker thread, turning the database's errors into ``ArkError``."""
        raise NotImplementedError

    def _shutdown(self) -> None:
        """Close the connection (in the worker thread, after the queued calls)."""
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or :meth:`aclose`; a closed store refuses every call."""
        return self._closed

    def close(self) -> None:
        """Wait for queued calls, close the connection and stop the worker thread."""
        if self._closed:
            return
        self._closed = True
        self._worker.stop(self._shutdown, wait=True)

    async def aclose(self) -> None:
        """:meth:`close` without blocking the event loop."""
        if self._closed:
            return
        self._closed = True
        await self._worker.run(self._shutdown)
        self._worker.stop()

    async def _call(self, code: ErrorCode, action: str, work: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if self._closed:
            raise ArkError(ErrorLayer.STORAGE, code, f"{action}: {self!r} is closed; open a new store to go on")
        return await self._worker.run(self._guarded, code, action, work, args, kwargs)

    def _read(self, work: Callable[..., _T], *args: Any) -> _T | None:
        raise NotImplementedError

    def _write_txn(self, work: Callable[..., _T], *args: Any, create: bool = True, sync: bool = True) -> _T | None:
        """Run ``work`` in a write transaction; with ``sync=False`` its commit does not wait
        for the disk (it survives the process being killed, not a power cut)."""
        raise NotImplementedError

    def _load(self, session_id: str) -> AgentState | None:
        raise NotImplementedError

    def _commit(self, commit: Commit) -> int | None:
        raise NotImplementedError

    def _committed(self, commit: Commit, written: _sql.Written | None) -> int | None:
        """Bookkeeping after a commit's transaction: counters, the rows this instance knows."""
        self.commits += 1
        self.synced_commits += commit.sync
        if written is None:
            return None
        self._written[commit.session_id] = written
        return written.revision

    # -- StateStorage ----------------------------------------------------------------

    async def load(self, session_id: str) -> AgentState | None:
        """The saved state (``state.revision`` is the stored revision), or None.

        Raises:
            ArkError: ``state_corrupt`` naming the session and the database (nothing is
                changed); ``state_version_unsupported`` for a newer state format;
                ``store_version_unsupported`` for a newer database layout;
                ``state_load_failed`` if the database cannot be read.
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
        """Remove the session: state, operations and outbox (no error if unknown). Its lease
        stays: deleting the data (``fresh=True``) does not end its owner's ownership."""
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

    async def read_events_before(self, session_id: str, before_sequence: int | None = None, *,
                                 limit: int) -> list[AgentEvent]:
        """The newest ``limit`` outbox events below ``before_sequence`` (of all, when None),
        oldest first: a timeline's page of older events, read backwards."""
        found = await self._call(ErrorCode.STATE_LOAD_FAILED, f"could not read the events of {session_id!r}",
                                 self._read, _sql.read_events_before, session_id, before_sequence, limit)
        return found or []

    async def acquire_lease(self, session_id: str, owner: str, *, ttl: float = DEFAULT_LEASE_TTL,
                            takeover: bool = False) -> Lease:
        """Take the session's lease (see :meth:`OperationStore.acquire_lease`)."""
        validate_session_id(session_id)
        # Lease writes do not wait for the disk: every other connection sees them at once
        # (which is all a lease is for), and only a power cut could undo one, which ends
        # every owner; the owner's first synced commit carries it to the disk (WAL order).
        return await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not take the lease of {session_id!r}",
                                self._write_txn, _sql.acquire_lease, session_id, owner, ttl, takeover, time.time(),
                                sync=False)

    async def renew_lease(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend the lease; ``lease_lost`` if it was taken over."""
        return await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not renew the lease of {lease.session_id!r}",
                                self._write_txn, _sql.renew_lease, lease, ttl, time.time(), sync=False)

    async def release_lease(self, lease: Lease) -> None:
        """Give the lease up (nothing happens if it was taken over)."""
        await self._call(ErrorCode.STATE_SAVE_FAILED, f"could not release the lease of {lease.session_id!r}",
                         self._write_txn, _sql.release_lease, lease, create=False, sync=False)

    def episode_rows(self) -> EpisodeRows:
        """The rows ``ark.EpisodicMemory(store)`` keeps its episodes in, in this database."""
        return EpisodeRows(self)

    def invocations_for(self, scope: Any) -> Any:
        """The runtime seam that makes a runtime's calls operations of this store (called by
        ``AgentRuntime``; see :mod:`arknb.durable.runtime_seam`)."""
        from .runtime_seam import DurableInvocations  # noqa: PLC0415 - the seam needs the bus

        return DurableInvocations(self, scope, lease_ttl=self.lease_ttl)
