"""The runtimes alive in this process, in the order they were made (DESIGN §18).

What the IPython extension lists (``%arknb``) and where ``%%chat`` finds "the last
runtime created in the kernel". Held by weak references only: being listed never keeps
a runtime alive.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["live_runtimes", "record"]

_order = itertools.count()
_live: "weakref.WeakKeyDictionary[AgentRuntime, int]" = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def record(runtime: AgentRuntime) -> None:
    """Note a new runtime (the runtime's constructor calls it)."""
    with _guard:
        _live[runtime] = next(_order)


def live_runtimes() -> list[AgentRuntime]:
    """The runtimes of this process that are still referenced, oldest first."""
    with _guard:
        found = sorted(_live.items(), key=lambda pair: pair[1])
    return [runtime for runtime, _ in found]
