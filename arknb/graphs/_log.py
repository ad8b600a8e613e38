"""Where a graph run keeps its checkpoint and its steps: a durable store, or plain storage.

A graph run is a session of the store (``graph.{run_id}``). Its checkpoint (the state,
its version, the nodes of the step under way, the path taken, who waits) lives in the
session's state, in the ``graph`` slice of ``AgentState.extensions``; each step is an
:class:`~arknb.durable.Operation` of kind ``node`` (DESIGN §16).

* :class:`DurableLog` (``SQLiteStore``, ``PostgresStore``, ``MemoryStore``): a step's
  operation is committed ``executing`` before the node runs and ``completed`` with its
  update after; a one-node step's completion, the next checkpoint and the ``executing``
  operations of the next step's function and map nodes go in one transaction, so a
  chain of function nodes costs one synced commit per step. The run holds the
  session's lease.
* :class:`PlainLog` (``MemoryStateStorage``, ``FileStateStorage``, any ``StateStorage``):
  the operations of the step under way ride inside the checkpoint and every change is
  one ``save``. It runs the same graphs, but it is not crash-safe the way a durable
  store is (no lease; a file store writes the whole checkpoint each time).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from typing import Any, Iterable

from arknb.durable import Commit, Lease, Operation, OperationStore
from arknb.durable.store import DEFAULT_LEASE_TTL, is_durable_store, new_owner_id
from arknb.events import AgentEvent
from arknb.state import AgentState, StateStorage

__all__ = ["DurableLog", "GRAPH_SLICE", "NullLog", "PlainLog", "StepLog", "graph_session", "log_for", "new_op_id"]

GRAPH_SLICE = "graph"


def graph_session(run_id: str) -> str:
    """The store session of graph run ``run_id``."""
    return f"graph.{run_id}"


_PREFIX = uuid.uuid4().hex[:10]
_COUNTER = itertools.count(1)


def new_op_id() -> str:
    """A fresh id (this process's random prefix and a counter: cheap, and unique across processes)."""
    return f"op_{_PREFIX}{next(_COUNTER):x}"


class StepLog:
    """What the engine needs from a store (see the module docstring)."""

    durable = False
    keeps_checkpoints = True

    def __init__(self, storage: Any, session_id: str) -> None:
        self.storage = storage
        self.session_id = session_id
        self.revision = 0
        self.sequence = 0

    async def open(self, *, takeover: bool = False) -> dict[str, Any] | None:
        """Take ownership (durable stores) and read the saved checkpoint (None: none)."""
        raise NotImplementedError

    async def _read_checkpoint(self) -> dict[str, Any] | None:
        """The saved session's graph checkpoint (None: none), its revision and sequence taken."""
        saved = await self.storage.load(self.session_id)
        if saved is None:
            return None
        self.revision = saved.revision
        self.sequence = saved.event_sequence
        checkpoint = saved.extensions.get(GRAPH_SLICE)
        return _thaw(checkpoint) if checkpoint is not None else None

    async def find(self, purpose_key: str) -> Operation | None:
        raise NotImplementedError

    async def items(self, scope: str) -> list[Operation]:
        """The operations of a map step's items (their ``run_id`` is ``scope``)."""
        raise NotImplementedError

    async def write(self, operations: Iterable[Operation] = (), events: Iterable[AgentEvent] = (),
                    checkpoint: dict[str, Any] | None = None, *, sync: bool = True) -> None:
        """Commit operations, events and (if given) the new checkpoint together; ``sync=False``
        does not wait for the disk (it still survives the process being killed)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Give ownership up."""

    def state(self, checkpoint: dict[str, Any]) -> AgentState:
        return AgentState(session_id=self.session_id, extensions={GRAPH_SLICE: checkpoint},
                          current_run_id=checkpoint.get("run_id"), is_running=checkpoint.get("status") == "running",
                          event_sequence=self.sequence, revision=self.revision, updated_at=time.time())


def log_for(storage: Any, session_id: str) -> StepLog:
    """The log that fits ``storage`` (None: :class:`NullLog`, the run lives in memory only)."""
    if storage is None:
        return NullLog(None, session_id)
    if is_durable_store(storage):
        return DurableLog(storage, session_id)
    return PlainLog(storage, session_id)


class DurableLog(StepLog):
    """Steps as operations on a durable store, under the session's lease."""

    durable = True

    def __init__(self, storage: OperationStore, session_id: str) -> None:
        super().__init__(storage, session_id)
        self.owner = new_owner_id()
        self.lease: Lease | None = None
        self.ttl = float(getattr(storage, "lease_ttl", DEFAULT_LEASE_TTL))
        self._renewer: asyncio.Task | None = None
        self._lock = asyncio.Lock()

    async def open(self, *, takeover: bool = False) -> dict[str, Any] | None:
        self.lease = await self.storage.acquire_lease(self.session_id, self.owner, ttl=self.ttl, takeover=takeover)
        self._renewer = asyncio.get_running_loop().create_task(self._renew())
        return await self._read_checkpoint()

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            if self.lease is None:
                return
            try:
                self.lease = await self.storage.renew_lease(self.lease, ttl=self.ttl)
            except Exception:  # lease_lost: the next commit says so
                return

    async def find(self, purpose_key: str) -> Operation | None:
        return await self.storage.find_operation(self.session_id, purpose_key)

    async def items(self, scope: str) -> list[Operation]:
        return await self.storage.list_operations(self.session_id, run_id=scope)

    async def write(self, operations: Iterable[Operation] = (), events: Iterable[AgentEvent] = (),
                    checkpoint: dict[str, Any] | None = None, *, sync: bool = True) -> None:
        async with self._lock:  # map items commit concurrently: revisions stay in order
            state = self.state(checkpoint) if checkpoint is not None else None
            revision = await self.storage.commit(Commit(
                session_id=self.session_id, state=state, operations=tuple(operations), events=tuple(events),
                lease=self.lease, sync=sync))
            if revision is not None:
                self.revision = revision

    async def close(self) -> None:
        renewer, self._renewer = self._renewer, None
        if renewer is not None:
            renewer.cancel()
            with contextlib.suppress(BaseException):
                await renewer
        lease, self.lease = self.lease, None
        if lease is not None:
            with contextlib.suppress(Exception):
                await self.storage.release_lease(lease)


class NullLog(StepLog):
    """No storage: the run lives in this process only (``Graph.run(..., storage=None)``)."""

    keeps_checkpoints = False

    def __init__(self, storage: Any, session_id: str) -> None:
        super().__init__(storage, session_id)
        self._ops: dict[str, Operation] = {}

    async def open(self, *, takeover: bool = False) -> dict[str, Any] | None:
        return None

    async def find(self, purpose_key: str) -> Operation | None:
        return self._ops.get(purpose_key)

    async def items(self, scope: str) -> list[Operation]:
        return [op for op in self._ops.values() if op.run_id == scope]

    async def write(self, operations: Iterable[Operation] = (), events: Iterable[AgentEvent] = (),
                    checkpoint: dict[str, Any] | None = None, *, sync: bool = True) -> None:
        for op in operations:  # kept while the step runs (a person's answer reads it)
            self._ops[op.purpose_key] = op
        if checkpoint is not None and len(self._ops) > 64:
            step_prefix = f"{checkpoint.get('run_id')}:{checkpoint.get('step')}:"
            self._ops = {k: v for k, v in self._ops.items() if k.startswith(step_prefix)}


class PlainLog(StepLog):
    """Steps inside the checkpoint of a plain ``StateStorage`` (not crash-safe: no lease)."""

    def __init__(self, storage: StateStorage, session_id: str) -> None:
        super().__init__(storage, session_id)
        self._ops: dict[str, dict[str, Any]] = {}   # purpose key -> operation JSON (the step under way)
        self._checkpoint: dict[str, Any] | None = None
        self._lock = asyncio.Lock()

    async def open(self, *, takeover: bool = False) -> dict[str, Any] | None:
        checkpoint = await self._read_checkpoint()
        if checkpoint is not None:
            self._ops = dict(checkpoint.pop("ops", {}))
            self._checkpoint = checkpoint
        return checkpoint

    async def find(self, purpose_key: str) -> Operation | None:
        body = self._ops.get(purpose_key)
        return Operation.model_validate(body) if body is not None else None

    async def items(self, scope: str) -> list[Operation]:
        return [Operation.model_validate(body) for body in self._ops.values() if body.get("run_id") == scope]

    async def write(self, operations: Iterable[Operation] = (), events: Iterable[AgentEvent] = (),
                    checkpoint: dict[str, Any] | None = None, *, sync: bool = True) -> None:
        async with self._lock:
            if checkpoint is not None:
                if checkpoint.get("step") != (self._checkpoint or {}).get("step"):
                    self._ops = {}  # a new step: the last one's operations are in its checkpoint
                self._checkpoint = checkpoint
            for op in operations:
                self._ops[op.purpose_key] = op.model_dump(mode="json")
            if self._checkpoint is None:
                return
            saved = dict(self._checkpoint)
            saved["ops"] = self._ops
            self.revision = await self.storage.save(self.state(saved))


def _thaw(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value
