"""The hook registry behind ``runtime.hooks``: decorators for notebook functions.

Re-running a notebook cell re-registers its hook under the same name, which replaces
the hook in place instead of adding a twin. Names are per slot (DESIGN §5): a
``guard`` in ``before_tool_call`` and a ``guard`` in ``after_tool_call`` are two hooks,
and re-registering one of them replaces only that one.

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
from typing import Any, Callable, Iterable, Iterator

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


def _slot_callable(fn: Callable[[Any], Any], timeout: float | None) -> tuple[SlotCallable, bool]:
    """How the pipeline calls ``fn``: (the callable, True if it is called directly).

    A coroutine function is awaited; a sync one with a timeout runs on a worker thread;
    any other sync one is called directly by the pipeline (no coroutine; if it hands
    back an awaitable, the pipeline awaits that)."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):
        return fn, False
    if timeout is not None:
        return _threaded(fn), False
    return fn, True


def _check_signature(slot: HookSlot, fn: Callable[..., Any], what: str, fix: str) -> None:
    """Refuse, at registration, a hook the pipeline could never call with its context."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin or C callable: nothing to check
    try:
        signature.bind(object())
    except TypeError:
        raise invalid_argument(
            f"hook {what}{signature} cannot run in {slot.value}: a hook takes one argument, the context "
            f"(a {_CONTEXT_NAMES[slot]}); write it as {fix}: ... (sync or async)") from None


_CONTEXT_NAMES = {
    HookSlot.BEFORE_RUN: "BeforeRunHookContext", HookSlot.BEFORE_MODEL_CALL: "ModelCallHookContext",
    HookSlot.ON_MODEL_CHUNK: "ModelChunkHookContext", HookSlot.AFTER_MODEL_CALL: "ModelResponseHookContext",
    HookSlot.BEFORE_TOOL_CALL: "ToolCallHookContext", HookSlot.AFTER_TOOL_CALL: "ToolResultHookContext",
    HookSlot.ON_TURN_COMPLETION: "TurnCompletionHookContext",
    HookSlot.BEFORE_PERSIST_STATE: "StatePersistenceHookContext",
    HookSlot.AFTER_PERSIST_STATE: "StatePersistenceHookContext", HookSlot.AFTER_RUN: "AfterRunHookContext",
}


def _unique(entries: Iterable[HookEntry]) -> list[HookEntry]:
    """``entries`` without repeats of the same object (a class hook stands under each slot)."""
    return list({id(e): e for e in entries}.values())


class HookRegistry:
    """Ordered hooks per slot, with one decorator per slot.

    Hooks run in ``order`` (lower first), then in registration order. Names are
    unique per slot: registering a name again in a slot replaces that slot's hook of
    the name where it stood. A class hook is one entry acting in several slots; a
    function registered under its name in one of them takes that slot over and leaves
    the class hook its other slots.
    """

    def __init__(self, hooks: Any = ()) -> None:
        self._entries: dict[tuple[str, HookSlot], HookEntry] = {}
        """``(name, slot) -> entry``; a class hook's entry stands under each of its slots."""
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
        direct: dict[HookSlot, SlotCallable] = {}
        for slot in HookSlot:
            # Only overridden slots take part, so a class hook costs nothing where it is silent.
            if getattr(type(hook), slot.value) is getattr(AgentHook, slot.value):
                continue
            method = getattr(hook, slot.value)
            where = f"{type(hook).__name__}.{slot.value}"
            if not callable(method):
                raise invalid_argument(f"hook {where} is a {type(method).__name__}, not a method, so it cannot "
                                       f"run in {slot.value}; define it as def {slot.value}(self, ctx): ... "
                                       "(or async def), or remove it")
            _check_signature(slot, method, where, f"def {slot.value}(self, ctx)")
            # A plain def runs as a decorated sync function does (it was once awaited, failed
            # and was skipped: a limit that never applied).
            slots[slot], called_directly = _slot_callable(method, timeout)
            if called_directly:
                direct[slot] = method
        hook_name = name or getattr(hook, "name", None) or type(hook).__name__
        return self._put(HookEntry(hook_name, slots, order, fail_closed, timeout, hook, direct=direct))

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
        _check_signature(slot, fn, hook_name, f"def {hook_name}(ctx)")
        call, called_directly = _slot_callable(fn, timeout)
        entry = HookEntry(hook_name, {slot: call}, order, fail_closed, timeout, fn,
                          direct={slot: fn} if called_directly else {})
        return self._put(entry)

    def _put(self, entry: HookEntry) -> HookEntry:
        replaced: list[HookEntry] = []
        for slot in entry.slots:
            old = self._entries.get((entry.name, slot))
            if old is not None and not any(old is r for r in replaced):
                replaced.append(old)
        if replaced:
            entry.seq = min(old.seq for old in replaced)  # replace in place: keep the old position
            for old in replaced:
                self._drop_slots(old, entry.slots.keys())
        else:
            self._seq += 1
            entry.seq = self._seq
        for slot in entry.slots:
            self._entries[(entry.name, slot)] = entry
        self._by_slot = None
        return entry

    def _drop_slots(self, entry: HookEntry, slots: Iterable[HookSlot]) -> None:
        """Take ``slots`` away from ``entry``; what it keeps stays registered as a narrower entry."""
        gone = set(slots)
        for slot in entry.slots:
            if self._entries.get((entry.name, slot)) is entry:
                del self._entries[(entry.name, slot)]
        kept = {s: fn for s, fn in entry.slots.items() if s not in gone}
        if kept:
            narrower = dataclasses.replace(entry, slots=kept,
                                           direct={s: fn for s, fn in entry.direct.items() if s in kept})
            narrower.seq = entry.seq
            for slot in kept:
                self._entries[(entry.name, slot)] = narrower
        self._by_slot = None

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
        unique = {id(entry): entry for entry in self._entries.values()}  # a class hook sits under each slot
        for entry in sorted(unique.values(), key=lambda e: e.seq):
            twin._put(dataclasses.replace(entry, slots=dict(entry.slots), direct=dict(entry.direct)))
        return twin

    # -- inspection and removal -----------------------------------------------------

    def remove(self, name: str, slot: HookSlot | str | None = None) -> None:
        """Unregister the hooks called ``name`` (in every slot), or only its hook in ``slot``.

        Raises:
            ArkError: ``invalid_argument`` for an unknown name, or a name with no hook in ``slot``.
        """
        if slot is None:
            entries = [e for (n, _), e in self._entries.items() if n == name]
        else:
            try:
                slot = HookSlot(slot)
            except ValueError:
                raise invalid_argument(f"unknown hook slot {slot!r}; slots are: "
                                       f"{', '.join(s.value for s in HookSlot)}") from None
            entry = self._entries.get((name, slot))
            entries = [entry] if entry is not None else []
        if not entries:
            where = f" in {slot.value}" if slot is not None else ""
            raise invalid_argument(f"no hook named {name!r}{where}; registered: "
                                   f"{self._listing() or '(none)'}")
        for entry in _unique(entries):
            self._drop_slots(entry, entry.slots.keys() if slot is None else (slot,))

    def clear(self) -> None:
        """Unregister every hook."""
        self._entries.clear()
        self._by_slot = None

    def for_slot(self, slot: HookSlot) -> tuple[HookEntry, ...]:
        """The hooks of ``slot`` in execution order (cached until the registry changes)."""
        by_slot = self._by_slot
        if by_slot is None:
            ordered = self._ordered()
            by_slot = {s: tuple(e for e in ordered if s in e.slots) for s in _SLOTS}
            self._by_slot = by_slot
        return by_slot[slot]

    def _ordered(self) -> list[HookEntry]:
        return sorted(_unique(self._entries.values()), key=lambda e: (e.order, e.seq))

    def _listing(self) -> str:
        return ", ".join(f"{e.name} [{'/'.join(e.slot_names)}]" for e in self._ordered())

    def __iter__(self) -> Iterator[HookEntry]:
        return iter(self._ordered())

    def __len__(self) -> int:
        return len(self._ordered())

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _ in self._entries)

    def names(self) -> list[str]:
        """Hook names in execution order, each once (a name may stand in several slots)."""
        return list(dict.fromkeys(e.name for e in self))

    def __repr__(self) -> str:
        listed = ", ".join(e.name + "[" + "/".join(e.slot_names) + "]" for e in self)
        return f"HookRegistry({listed})"
