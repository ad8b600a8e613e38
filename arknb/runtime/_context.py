"""RunContext: what one run carries while it is active (never saved)."""

from __future__ import annotations

import time

from ..domain import CancellationToken, Usage

__all__ = ["OfRun", "RunContext"]


class RunContext:
    """Mutable bookkeeping of the active run; owned by the runtime, never shown to hooks."""

    __slots__ = ("run_id", "cancel", "turn", "usage", "started_at", "after_run_done",
                 "suspend_requested", "task", "final_message", "cancel_requested", "started", "finishing",
                 "continued", "output", "truncated")

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.cancel = CancellationToken()
        self.turn = 0
        self.usage = Usage()
        self.started_at = time.time()
        self.after_run_done = False
        self.suspend_requested = False
        self.cancel_requested = False
        self.task = None
        self.final_message = None
        self.started = False
        self.finishing = False
        self.continued = False  # it goes on with an earlier run's id (after a crash or in-doubt calls)
        self.output = None  # the run's OutputPhase (set at launch): how its answer is asked for and settled
        self.truncated = False  # the last model answer was cut at max_tokens


class OfRun:
    """The run a seam-facing object (a model call, a tool batch) belongs to: ``ctx`` is
    its :class:`RunContext`."""

    __slots__ = ()

    @property
    def run_id(self) -> str:
        return self.ctx.run_id

    @property
    def turn(self) -> int:
        return self.ctx.turn
