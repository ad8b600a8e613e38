"""Durable invocation (seed 004, DESIGN §13): operations, the invocation bus, durable stores.

With a durable store every model call and tool call is an :class:`Operation`
committed phase by phase, so a kernel that dies at any moment resumes without
re-running a tool that finished, and calls whose fate is unknown go to a person.

It plugs into the runtime through its storage seam: it imports ``domain``, ``events``
and ``state``, never the runtime (DESIGN §1).
"""

# operations
from .operation import Attempt, HookRecord, Operation, OperationPhase, OperationStatus

# the invocation bus
from .bus import InvocationBus
from .requests import EventRequest, EventResponse, Interception, Interceptor, PendingOperationRef

# stores
from .memory_store import MemoryStore
from .postgres_store import PostgresStore
from .sqlite_store import SQLiteStore
from .store import DEFAULT_LEASE_TTL, Commit, Lease, OperationStore

__all__ = [
    "Attempt", "Commit", "DEFAULT_LEASE_TTL", "EventRequest", "EventResponse", "HookRecord", "Interception",
    "Interceptor", "InvocationBus", "Lease", "MemoryStore", "Operation", "OperationPhase", "OperationStatus",
    "OperationStore", "PendingOperationRef", "PostgresStore", "SQLiteStore",
]
