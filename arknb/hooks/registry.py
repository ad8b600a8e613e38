"""The hook registry behind ``runtime.hooks``: decorators for notebook functions.

Re-running a notebook cell re-registers its hook under the same name, which replaces
the hook in place instead of adding a twin.

Example:
    >>> hooks = HookRegistry()
    >>> @hooks.before_tool_call
    ... def no_negatives(ctx):
    ...     return None            # None means proceed unchanged
    >>> [h.name for h in hooks]
    ['no_negatives']
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..domain import invalid_argument
from ..domain.threads import run_blocking
from .spi import OBSERVER_SLOTS, AgentHook, HookSlot

__all__ = ["HookEntry", "HookRegistry"]

SlotCallable = Callable[[Any], Any]
_SLOTS = tuple(HookSlot)


@dataclass(slots=True)
class HookEntry:
    """One registered hook: its name, options and the slots it implements."""

    name: str
    slots: dict[HookSlot, SlotCallable]
    order: int = 0
    fail_closed: bool = False
    timeout: float | None = None
    source: Any = None
    seq: int = field(default=0, repr=False)
    direct: dict[HookSlot, SlotCallable] = field(default_factory=dict, repr=False)
    """Sync functions without a timeout, called without a coroutine wrapper (hot path)."""
    propagate: bool = False
    """A runtime extension's hook: its failure in a decision slot fails the run instead of
    being skipped (DESIGN §14); user hooks stay fail-open unless ``fail_closed``."""

    @property
    def slot_names(self) -> tuple[str, ...]:
        """The slots this hook acts in."""
        return tuple(s.value for s in self.slots)


def _check_options(name: Any, order: Any, fail_closed: Any, timeout: Any) -> None:
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise invalid_argument(f"hook name must be a non-empty string, got {name!r}")
    if isinstance(order, bool) or not isinstance(order, int):
        raise invalid_argument(f"hook order must be an int, got {order!r}")
    if not isinstance(fail_closed, bool):
        raise invalid_argument(f"hook fail_closed must be a bool, got {fail_closed!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise invalid_argument(f"hook timeout must be a positive number of seconds or None, got {timeout!r}")


def _threaded(fn: Callable[[Any], Any]) -> SlotCallable:
    """A sync function as ``async (ctx) -> result`` run on arknb's worker threads: a
    timeout can only be enforced on sync code that runs off the loop."""
    async def threaded(ctx: Any) -> Any:
        return await run_blocking(fn, ctx)
    return threaded


class HookRegistry:
    """Ordered hooks per slot, with one decorator per slot.

    Hooks run in ``order`` (lower first), then in registration order. Names are
    unique: registering a name again replaces that hook where it stood.
    """

    def __init__(self, hooks: Any = ()) -> None:
        self._entries: dict[str, HookEntry] = {}
        self._seq = 0
        self._by_slot: dict[HookSlot, tuple[HookEntry, ...]] | None = None
        for hook in hooks:
            self.add(hook)

    # -- registration ---------------------------------------------------------------

    def add(self, hook: AgentHook, *, name: str | None = None, order: int = 0,
            fail_closed: bool = False, timeout: float | None = None) -> HookEntry:
        """Register a class-based hook (an :class:`AgentHook` instance)."""
        if isinstance(hook, type):
            raise invalid_argument(f"add() expects a hook instance, got the class {hook.__name__}; "
                                   f"call it first: hooks.add({hook.__name__}())")
        if not isinstance(hook, AgentHook):
            raise invalid_argument(f"add() expects an AgentHook instance, got {type(hook).__name__}; "
                                   "decorate plain functions with @hooks.<slot> instead")
        _check_options(name, order, fail_closed, timeout)
        slots: dict[HookSlot, SlotCallable] = {}
        for slot in HookSlot:
            # Only overridden slots take part, so a class hook costs nothing where it is silent.
            if getattr(type(hook), slot.value) is not getattr(AgentHook, slot.value):
                slots[slot] = getattr(hook, slot.value)
        hook_name = name or getattr(hook, "name", None) or type(hook).__name__
        return self._put(HookEntry(hook_name, slots, order, fail_closed, timeout, hook))

    def register(self, slot: HookSlot | str, fn: Callable[[Any], Any], *, name: str | None = None,
                 order: int = 0, fail_closed: bool = False, timeout: float | None = None) -> HookEntry:
        """Register a function for one slot (what the decorators call)."""
        try:
            slot = HookSlot(slot)
        except ValueError:
            raise invalid_argument(f"unknown hook slot {slot!r}; slots are: "
                                   f"{', '.join(s.value for s in HookSlot)}") from None
        if not callable(fn):
            raise invalid_argument(f"a {slot.value} hook must be callable, got {type(fn).__name__}")
        _check_options(name, order, fail_closed, timeout)
        if fail_closed and slot in OBSERVER_SLOTS:
            raise invalid_argument(f"fail_closed has no effect on the observer slot {slot.value}: an observer "
                                   "cannot stop the run; drop fail_closed=True")
        hook_name = name or getattr(fn, "__name__", None) or repr(fn)
        if inspect.iscoroutinefunction(fn):
            entry = HookEntry(hook_name, {slot: fn}, order, fail_closed, timeout, fn)
        elif timeout is not None:
            entry = HookEntry(hook_name, {slot: _threaded(fn)}, order, fail_closed, timeout, fn)
        else:
            # Called directly by the pipeline (no coroutine); if it hands back an awaitable,
            # the pipeline awaits that.
            entry = HookEntry(hook_name, {slot: fn}, order, fail_closed, timeout, fn, direct={slot: fn})
        return self._put(entry)

    def _put(self, entry: HookEntry) -> HookEntry:
        old = self._entries.get(entry.name)
        if old is not None:
            entry.seq = old.seq  # replace in place: keep the old position
        else:
            self._seq += 1
            entry.seq = self._seq
        self._entries[entry.name] = entry
        self._by_slot = None
        return entry

    def _decorator(self, slot: HookSlot, fn: Callable | None, name: str | None, order: int,
                   fail_closed: bool, timeout: float | None) -> Any:
        if fn is not None:
            self.register(slot, fn, name=name, order=order, fail_closed=fail_closed, timeout=timeout)
            return fn
        _check_options(name, order, fail_closed, timeout)

        def decorate(f: Callable) -> Callable:
            self.register(slot, f, name=name, order=order, fail_closed=fail_closed, timeout=timeout)
            return f
        return decorate

    def before_run(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate ``fn(ctx: BeforeRunHookContext) -> BeforeRunHookResult | None``."""
        return self._decorator(HookSlot.BEFORE_RUN, fn, name, order, fail_closed, timeout)

    def before_model_call(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate ``fn(ctx: ModelCallHookContext) -> ModelCallHookResult | None``."""
        return self._decorator(HookSlot.BEFORE_MODEL_CALL, fn, name, order, fail_closed, timeout)

    def on_model_chunk(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate ``fn(ctx: ModelChunkHookContext) -> ModelChunkHookResult | None``."""
        return self._decorator(HookSlot.ON_MODEL_CHUNK, fn, name, order, fail_closed, timeout)

    def after_model_call(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate ``fn(ctx: ModelResponseHookContext) -> ModelResponseHookResult | None``."""
        return self._decorator(HookSlot.AFTER_MODEL_CALL, fn, name, order, fail_closed, timeout)

    def before_tool_call(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate ``fn(ctx: ToolCallHookContext) -> ToolCallHookResult | None``."""
        return self._decorator(HookSlot.BEFORE_TOOL_CALL, fn, name, order, fail_closed, timeout)

    def after_tool_call(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate ``fn(ctx: ToolResultHookContext) -> ToolResultHookResult | None``."""
        return self._decorator(HookSlot.AFTER_TOOL_CALL, fn, name, order, fail_closed, timeout)

    def on_turn_completion(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate ``fn(ctx: TurnCompletionHookContext) -> TurnCompletionHookResult | None``."""
        return self._decorator(HookSlot.ON_TURN_COMPLETION, fn, name, order, fail_closed, timeout)

    def before_persist_state(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate ``fn(ctx: StatePersistenceHookContext) -> StatePersistenceHookResult | None``."""
        return self._decorator(HookSlot.BEFORE_PERSIST_STATE, fn, name, order, fail_closed, timeout)

    def after_persist_state(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate an observer ``fn(ctx: StatePersistenceHookContext) -> None``."""
        return self._decorator(HookSlot.AFTER_PERSIST_STATE, fn, name, order, fail_closed, timeout)

    def after_run(self, fn=None, *, name=None, order=0, fail_closed=False, timeout=None):
        """Decorate an observer ``fn(ctx: AfterRunHookContext) -> None`` (runs once per run)."""
        return self._decorator(HookSlot.AFTER_RUN, fn, name, order, fail_closed, timeout)

    def copy(self) -> HookRegistry:
        """A new registry holding the same hooks, in the same order and with the same options
        (a sub-agent cloned from a runtime starts with its hooks; adding or removing one later
        changes only that registry)."""
        twin = HookRegistry()
        for entry in self._entries.values():
            twin._put(dataclasses.replace(entry, slots=dict(entry.slots), direct=dict(entry.direct)))
        return twin

    # -- inspection and removal -----------------------------------------------------

    def remove(self, name: str) -> None:
        """Unregister the hook called ``name``; an unknown name raises ``invalid_argument``."""
        if name not in self._entries:
            raise invalid_argument(f"no hook named {name!r}; registered: {', '.join(self._entries) or '(none)'}")
        del self._entries[name]
        self._by_slot = None

    def clear(self) -> None:
        """Unregister every hook."""
        self._entries.clear()
        self._by_slot = None

    def for_slot(self, slot: HookSlot) -> tuple[HookEntry, ...]:
        """The hooks of ``slot`` in execution order (cached until the registry changes)."""
        by_slot = self._by_slot
        if by_slot is None:
            ordered = sorted(self._entries.values(), key=lambda e: (e.order, e.seq))
            by_slot = {s: tuple(e for e in ordered if s in e.slots) for s in _SLOTS}
            self._by_slot = by_slot
        return by_slot[slot]

    def __iter__(self) -> Iterator[HookEntry]:
        return iter(sorted(self._entries.values(), key=lambda e: (e.order, e.seq)))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        """Hook names in execution order."""
        return [e.name for e in self]

    def __repr__(self) -> str:
        listed = ", ".join(e.name + "[" + "/".join(e.slot_names) + "]" for e in self)
        return f"HookRegistry({listed})"
