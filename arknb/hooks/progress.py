"""Per-hook progress: how a durable seam learns each hook's decision as it is made.

A slot's hooks run one after another (seed 000 §5). For the slots around an operation
(``before_model_call``, ``after_model_call``, ``before_tool_call``, ``after_tool_call``)
a durable store records each finished hook's name and decision in the operation's
``hook_progress`` (DESIGN §13), so that a process killed in the middle of a slot is
continued by a new one that skips the hooks already recorded and runs only the rest.

The pipeline drives a :class:`HookProgress` given to it: before a hook runs it asks
whether that hook is recorded already (then the hook is skipped: its effect is in the
value the caller started from) and lets the progress make the earlier hooks' records
durable (:meth:`HookProgress.before_hook`); after the hook it hands over the
:class:`HookStep` and the slot's value as it now stands (:meth:`HookProgress.after_hook`).
A progress that only stages in ``after_hook`` and writes in ``before_hook`` lets the last
hook's record ride the commit that ends the phase (the operation's ``executing`` or
``completed`` commit) instead of a commit of its own.

Without a progress (the in-memory runtime) the pipeline records nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["HookProgress", "HookStep"]


@dataclass(frozen=True, slots=True)
class HookStep:
    """One finished hook's decision in one slot.

    Attributes:
        hook: the hook's name (unique within its slot).
        action: ``proceed``, ``rewrite``, ``failed`` (fail-open: the value is as before),
            or the short-circuit the hook chose (``deny``, ``defer``, ``respond``,
            ``abort``, ``retry``, ``stop``).
        reason: the reason the hook gave, if any.
        injected: ``after_tool_call``: the messages this hook injected (JSON-ready dicts).
        detail: ``defer``: the kind of pending item and its detail (``{"kind": ...,
            "detail": {...}}``), so a restore defers the call as the same kind of item.
    """

    hook: str
    action: str
    reason: str | None = None
    injected: tuple[Any, ...] = ()
    detail: Any = None


@runtime_checkable
class HookProgress(Protocol):
    """What the pipeline reports each hook of one slot to (see the module docstring)."""

    def recorded(self, hook: str) -> bool:
        """True if ``hook`` already ran and its decision is recorded: it is skipped."""
        ...

    async def before_hook(self, hook: str) -> None:
        """``hook`` is about to run: make the records of the hooks before it durable."""
        ...

    def after_hook(self, step: HookStep, value: Any) -> None:
        """``step`` finished; ``value`` is the slot's value after it (request, response,
        call or result, as the next hook will see it)."""
        ...
