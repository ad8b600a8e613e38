"""The durable layer of seed 004: what must outlive the kernel, in one SQLite database.

Its first piece is :class:`SQLiteStateStorage`, a :class:`~arknb.state.StateStorage`
that appends each save's new messages instead of rewriting the session. Operations and
the invocation pipeline (seed 004) will add their tables to the same database file,
as later steps of its versioned layout.

It plugs into the runtime through the storage seam only: it imports ``domain`` and
``state``, never the runtime (DESIGN §1).
"""

# state store
from .sqlite_store import SQLiteStateStorage

__all__ = ["SQLiteStateStorage"]
