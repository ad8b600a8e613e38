"""The runtime's own parts refer back to it weakly, so a finished runtime is freed at once.

The runtime owns its controller, hook pipeline and redactor. Were they to hold the
runtime (or a bound method of it) strongly while it holds them, every runtime would
sit in a reference cycle and outlive its last reference until the garbage collector
ran: a suite that makes a runtime per case would keep finished runtimes, each with its
history, alive.

The controller is the one part users keep on its own (``ctl = runtime.controller``),
so it is the one that holds the runtime strongly; the runtime holds it weakly and
makes a new one when none is left. It holds no state of its own (seed 000 §6), so a
new one is as good as the last, and while anyone holds one, ``runtime.controller``
returns that same one.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable

from ..controller import AgentController

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["NO_CONTROLLER", "controller_of", "weak_method"]


def NO_CONTROLLER() -> None:  # noqa: N802 - stands for a dead weak reference
    """What ``runtime._controller`` is before its first controller: a reference to nothing."""
    return None


def controller_of(runtime: AgentRuntime) -> AgentController:
    """The runtime's controller: the one someone still holds, or a new one bound to it."""
    controller = runtime._controller()
    if controller is None:
        controller = AgentController(runtime.bus)
        controller.bind_approval_host(runtime)
        runtime._controller = weakref.ref(controller)
    return controller


def weak_method(method: Callable[..., None]) -> Callable[..., None]:
    """A function calling the bound ``method`` while its object lives (a no-op after), without keeping it alive.

    Example:
        >>> emit = weak_method(runtime._emit)   # doctest: +SKIP
    """
    ref = weakref.WeakMethod(method)

    def call(*args: Any, **kwargs: Any) -> None:
        bound = ref()
        if bound is not None:
            bound(*args, **kwargs)

    return call
