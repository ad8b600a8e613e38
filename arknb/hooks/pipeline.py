"""HookPipeline: runs the hooks of a slot under the laws of seed 000 §5.

1. strictly serial, in registry order, each awaited;
2. a rewrite is passed to the next hook;
3. the first short-circuit wins and later hooks do not run;
4. a rewritten tool call keeps the original call id;
5. ``injected_messages`` accumulate in hook order and survive ``stop``;
6. observers (``after_persist_state``, ``after_run``) are isolated: their exceptions
   become ``hook.diagnostic`` events;
7. a mandatory save ignores ``skip`` but honours ``abort``;
8. a failing hook (exception, timeout, invalid result) is fail-open: a diagnostic is
   published and the value stays as it was before that hook; ``fail_closed=True``
   turns the failure into ``abort`` with ``hook_abort`` (seed 004 §6).

Every non-trivial outcome is published as ``hook.decision`` with before/after values.
"""

from __future__ import annotations

import asyncio
import inspect
import dataclasses
from typing import Any, Callable

from pydantic import BaseModel

from ..domain import ArkError, ErrorCode, ErrorLayer
from ..events import EventTypes
from .progress import HookProgress, HookStep
from ..events.envelope import frozen_dump
from .contexts import (
    AfterRunHookContext, BeforeRunHookContext, ModelCallHookContext, ModelChunkHookContext,
    ModelResponseHookContext, StatePersistenceHookContext, ToolCallHookContext,
    ToolResultHookContext, TurnCompletionHookContext,
)
from .registry import HookEntry, HookRegistry
from .results import (
    BeforeRunAction, BeforeRunHookResult, ModelCallAction, ModelCallHookResult, ModelChunkAction,
    ModelChunkHookResult, ModelResponseAction, ModelResponseHookResult, PersistAction,
    StatePersistenceHookResult, ToolCallAction, ToolCallHookResult, ToolResultAction,
    ToolResultHookResult, TurnCompletionAction, TurnCompletionHookResult,
)
from .spi import SLOT_RESULT_TYPES, HookSlot

__all__ = ["HookPipeline", "Emit", "jsonable"]

Emit = Callable[[str, Callable[[], dict[str, Any]]], None]
"""``emit(event_type, payload_factory)``: the factory is called only if someone listens."""

_FAILED = object()
_ASYNC = object()
# Outcomes without values are immutable: one shared instance each.
_ACCEPT = TurnCompletionHookResult.accept()
_PERSIST = StatePersistenceHookResult.proceed()


class _Started:
    """An awaitable a sync hook function returned, still to be awaited."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Any) -> None:
        self.awaitable = awaitable


def jsonable(value: Any) -> Any:
    """A JSON-ready form of a hook value, for event payloads (read-only: a model's dump
    is frozen, and kept for the next event that shows the same value)."""
    if isinstance(value, BaseModel):
        return frozen_dump(value)
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


class HookPipeline:
    """Executes registered hooks for each slot. Built by the runtime around its registry."""

    def __init__(self, registry: HookRegistry, emit: Emit | None = None, tail: HookRegistry | None = None) -> None:
        self.registry = registry
        self.tail = tail
        """Hooks that run after the registry's own in every slot (the runtime's extensions)."""
        self._emit = emit or (lambda _type, _payload: None)
        self._joined: dict[HookSlot, tuple[tuple, tuple, tuple]] = {}

    def has(self, slot: HookSlot) -> bool:
        """True if any hook acts in ``slot`` (lets the runtime skip building contexts)."""
        return bool(self._for_slot(slot))

    def _for_slot(self, slot: HookSlot) -> tuple[HookEntry, ...]:
        own = self.registry.for_slot(slot)
        tail = self.tail
        if tail is None:
            return own
        extra = tail.for_slot(slot)
        if not extra:
            return own
        if not own:
            return extra
        # Both registries hand out the same tuple until they change: join once per change.
        joined = self._joined.get(slot)
        if joined is None or joined[0] is not own or joined[1] is not extra:
            joined = (own, extra, own + extra)
            self._joined[slot] = joined
        return joined[2]

    # -- one hook call, isolated ----------------------------------------------------

    def _call_direct(self, entry: HookEntry, slot: HookSlot, ctx: Any) -> Any:
        """The hot path for plain sync function hooks: call without creating a coroutine.

        Returns what :meth:`_call` would, ``_ASYNC`` when the hook is not a plain sync
        function (then use :meth:`_call`), or a :class:`_Started` awaitable the function
        returned (then finish it with :meth:`_call`, which does not call the hook again).
        """
        direct = entry.direct.get(slot)
        if direct is None:
            return _ASYNC
        try:
            result = direct(ctx)
        except Exception as exc:  # fail-open by default: seed 004 §6
            return self._failure(entry, slot, "exception", f"{type(exc).__name__}: {exc}", exc)
        if result is None:
            return None
        if inspect.isawaitable(result):
            return _Started(result)
        return self._checked(entry, slot, result)

    async def _call_with_progress(self, entry: HookEntry, slot: HookSlot, ctx: Any,
                                  progress: HookProgress | None, value: Any) -> Any:
        """``entry``'s result to act on, or None: ``progress`` recorded the hook already (a
        restore skips it), or it let ``value`` through or failed open (reported to
        ``progress`` with ``value`` as it stands)."""
        if progress is not None:
            if progress.recorded(entry.name):
                return None
            await progress.before_hook(entry.name)
        result = await self._call(entry, slot, ctx)
        if result is None or result is _FAILED:
            if progress is not None:
                progress.after_hook(_step(entry, result), value)
            return None
        return result

    async def _call(self, entry: HookEntry, slot: HookSlot, ctx: Any, started: Any = None) -> Any:
        """Call one hook; returns its result, ``None`` (proceed) or ``_FAILED``.

        On failure a diagnostic is published; with ``fail_closed`` an ``abort`` result of
        the slot's type is returned instead of ``_FAILED``. ``started`` is what
        :meth:`_call_direct` already returned for this hook, if the caller tried it first.
        """
        if started is None:
            started = self._call_direct(entry, slot, ctx)
        if started is not _ASYNC and started.__class__ is not _Started:
            return started  # a plain sync function: already called and checked
        try:
            if started.__class__ is _Started:
                result = await started.awaitable
            elif entry.timeout is not None:
                result = await asyncio.wait_for(entry.slots[slot](ctx), entry.timeout)
            else:
                result = await entry.slots[slot](ctx)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            return self._failure(entry, slot, "timeout", f"did not finish within {entry.timeout:g} s")
        except Exception as exc:  # fail-open by default: seed 004 §6
            return self._failure(entry, slot, "exception", f"{type(exc).__name__}: {exc}", exc)
        return self._checked(entry, slot, result)

    def _checked(self, entry: HookEntry, slot: HookSlot, result: Any) -> Any:
        expected = SLOT_RESULT_TYPES[slot]
        if result is None or expected is None or isinstance(result, expected):
            return result
        return self._failure(entry, slot, "invalid_result",
                             f"returned {type(result).__name__}; expected {expected.__name__} or None")

    def _failure(self, entry: HookEntry, slot: HookSlot, kind: str, message: str,
                 exc: BaseException | None = None) -> Any:
        if entry.propagate and SLOT_RESULT_TYPES[slot] is not None:
            # An extension's hook is configuration: its failure fails the run (DESIGN §14).
            if isinstance(exc, ArkError):
                raise exc
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.INTERNAL_ERROR,
                           f"extension hook {entry.name!r} failed in {slot.value} ({kind}: {message})")
        self._emit(EventTypes.HOOK_DIAGNOSTIC, lambda: {
            "slot": slot.value, "hook": entry.name, "kind": kind, "message": message,
            "fail_closed": entry.fail_closed})
        if entry.fail_closed and SLOT_RESULT_TYPES[slot] is not None:
            error = ArkError(ErrorLayer.SECURITY, ErrorCode.HOOK_ABORT,
                             f"hook {entry.name!r} failed in {slot.value} ({kind}: {message}) and is fail-closed")
            return SLOT_RESULT_TYPES[slot].abort(error.message, error).by(entry.name)
        return _FAILED

    def _decision(self, slot: HookSlot, hook: str, action: str, reason: str | None,
                  before: Any, after: Any, **extra: Any) -> None:
        self._emit(EventTypes.HOOK_DECISION, lambda: {
            "slot": slot.value, "hook": hook, "action": action, "reason": reason,
            "before": jsonable(before), "after": jsonable(after), **extra})

    # -- decision slots -------------------------------------------------------------

    async def before_run(self, ctx: BeforeRunHookContext) -> BeforeRunHookResult:
        """Rewrite or abort the run's input."""
        value = ctx.input
        current = ctx
        for entry in self._for_slot(HookSlot.BEFORE_RUN):
            result = await self._call(entry, HookSlot.BEFORE_RUN, current)
            if result is None or result is _FAILED:
                continue
            if result.action is BeforeRunAction.ABORT:
                self._decision(HookSlot.BEFORE_RUN, entry.name, "abort", result.reason, value, None)
                return result.by(entry.name)
            if result.input is not None and result.input != value:
                self._decision(HookSlot.BEFORE_RUN, entry.name, "rewrite", result.reason, value, result.input)
                value = result.input
                current = ctx.copy_with(input=value)
        return BeforeRunHookResult._trusted(BeforeRunAction.PROCEED, input=value)

    async def before_model_call(self, ctx: ModelCallHookContext,
                                progress: HookProgress | None = None) -> ModelCallHookResult:
        """Rewrite the request, answer without the model (``respond``) or abort.

        With ``progress`` each hook's decision is reported as it is made and hooks it
        recorded earlier are skipped (``ctx.request`` is then the request they made).
        """
        request = ctx.request
        current = ctx
        rewriter = None  # the last hook that rewrote: the proceed outcome names it
        for entry in self._for_slot(HookSlot.BEFORE_MODEL_CALL):
            result = await self._call_with_progress(entry, HookSlot.BEFORE_MODEL_CALL, current, progress, request)
            if result is None:
                continue
            if result.action is ModelCallAction.RESPOND:
                self._decision(HookSlot.BEFORE_MODEL_CALL, entry.name, "respond", result.reason,
                               None, result.response)
                if progress is not None:
                    progress.after_hook(HookStep(entry.name, "respond", result.reason), result.response)
                return result.by(entry.name)
            if result.action is ModelCallAction.ABORT:
                self._decision(HookSlot.BEFORE_MODEL_CALL, entry.name, "abort", result.reason, None, None)
                if progress is not None:
                    progress.after_hook(_aborted(entry, result), request)
                return result.by(entry.name)
            action = "proceed"
            if result.request is not None and result.request != request:
                before, after = _request_change(request, result.request)
                self._decision(HookSlot.BEFORE_MODEL_CALL, entry.name, "rewrite", result.reason, before, after)
                request = result.request
                current = ctx.copy_with(request=request)
                action = "rewrite"
                rewriter = entry.name
            if progress is not None:
                progress.after_hook(HookStep(entry.name, action, result.reason), request)
        return ModelCallHookResult._trusted(ModelCallAction.PROCEED, request=request, hook=rewriter)

    async def on_model_chunk(self, ctx: ModelChunkHookContext) -> ModelChunkHookResult:
        """Rewrite, drop, hold back or abort one streamed chunk."""
        outcome = await self.filter_chunk(ctx)
        return ModelChunkHookResult._trusted_proceed(ctx.text, ctx.reasoning) if outcome is None else outcome

    async def filter_chunk(self, ctx: ModelChunkHookContext) -> ModelChunkHookResult | None:
        """:meth:`on_model_chunk` for the stream collector, which calls it once per chunk:
        ``None`` when every hook let the chunk through unchanged, so no result is built."""
        text, reasoning = ctx.text, ctx.reasoning
        current = ctx  # copied only when a hook rewrites
        for entry in self._for_slot(HookSlot.ON_MODEL_CHUNK):
            result = self._call_direct(entry, HookSlot.ON_MODEL_CHUNK, current)
            if result is _ASYNC or result.__class__ is _Started:
                result = await self._call(entry, HookSlot.ON_MODEL_CHUNK, current, result)
            if result is None or result is _FAILED:
                continue
            action = result.action
            if action is ModelChunkAction.HOLD and ctx.final:
                # Nothing follows the final flush to join with: holding it would lose it.
                self._emit(EventTypes.HOOK_DIAGNOSTIC, lambda: {
                    "slot": HookSlot.ON_MODEL_CHUNK.value, "hook": entry.name, "kind": "invalid_result",
                    "message": "hold() on the final flush (final=True) is treated as proceed: nothing follows "
                               "to join the held text with", "fail_closed": entry.fail_closed})
                continue
            if action is not ModelChunkAction.PROCEED:
                self._decision(HookSlot.ON_MODEL_CHUNK, entry.name, action.value, result.reason,
                               {"text": text, "reasoning": reasoning}, None, index=ctx.index)
                return result.by(entry.name)
            new_text = text if result.text is None else result.text
            new_reasoning = reasoning if result.reasoning is None else result.reasoning
            if new_text != text or new_reasoning != reasoning:
                self._decision(HookSlot.ON_MODEL_CHUNK, entry.name, "rewrite", result.reason,
                               {"text": text, "reasoning": reasoning},
                               {"text": new_text, "reasoning": new_reasoning}, index=ctx.index)
                text, reasoning = new_text, new_reasoning
                current = ctx.copy_with(text=text, reasoning=reasoning)
        if current is ctx:
            return None
        return ModelChunkHookResult._trusted_proceed(text, reasoning)

    async def after_model_call(self, ctx: ModelResponseHookContext,
                               progress: HookProgress | None = None) -> ModelResponseHookResult:
        """Rewrite the response, ask for a retry, or abort (``progress``: see :meth:`before_model_call`)."""
        response = ctx.response
        current = ctx
        rewriter = None
        for entry in self._for_slot(HookSlot.AFTER_MODEL_CALL):
            result = await self._call_with_progress(entry, HookSlot.AFTER_MODEL_CALL, current, progress, response)
            if result is None:
                continue
            if result.action is not ModelResponseAction.PROCEED:
                self._decision(HookSlot.AFTER_MODEL_CALL, entry.name, result.action.value, result.reason,
                               response.message if response else None, None)
                if progress is not None:
                    progress.after_hook(_aborted(entry, result) if result.action is ModelResponseAction.ABORT
                                        else HookStep(entry.name, result.action.value, result.reason), response)
                return result.by(entry.name)
            action = "proceed"
            if result.response is not None and result.response != response:
                self._decision(HookSlot.AFTER_MODEL_CALL, entry.name, "rewrite", result.reason,
                               response.message if response else None, result.response.message)
                response = result.response
                current = ctx.copy_with(response=response)
                action = "rewrite"
                rewriter = entry.name
            if progress is not None:
                progress.after_hook(HookStep(entry.name, action, result.reason), response)
        return ModelResponseHookResult._trusted(ModelResponseAction.PROCEED, response=response, hook=rewriter)

    async def before_tool_call(self, ctx: ToolCallHookContext,
                               progress: HookProgress | None = None) -> ToolCallHookResult:
        """Rewrite (keeping the call id), deny with a synthetic result, defer, or abort
        (``progress``: see :meth:`before_model_call`)."""
        call = ctx.call
        original_id = call.id
        current = ctx
        rewriter = None
        for entry in self._for_slot(HookSlot.BEFORE_TOOL_CALL):
            result = await self._call_with_progress(entry, HookSlot.BEFORE_TOOL_CALL, current, progress, call)
            if result is None:
                continue
            if result.action is not ToolCallAction.PROCEED:
                self._decision(HookSlot.BEFORE_TOOL_CALL, entry.name, result.action.value, result.reason,
                               call, result.synthetic_result, call_id=original_id)
                if progress is not None:
                    progress.after_hook(_aborted(entry, result) if result.action is ToolCallAction.ABORT
                                        else HookStep(entry.name, result.action.value, result.reason,
                                                      detail=_deferral(result)),
                                        result.synthetic_result if result.action is ToolCallAction.DENY else call)
                # Carry the call as rewritten by the earlier hooks: a deferred call waits for
                # approval in that form (DESIGN §7).
                return dataclasses.replace(result.by(entry.name), call=call)
            action = "proceed"
            if result.call is not None and result.call != call:
                new_call = result.call
                if new_call.id != original_id:
                    # Seed 000 §5.3: a rewrite may change name and arguments, never the id.
                    new_call = new_call.model_copy(update={"id": original_id})
                self._decision(HookSlot.BEFORE_TOOL_CALL, entry.name, "rewrite", result.reason,
                               call, new_call, call_id=original_id)
                call = new_call
                current = ctx.copy_with(call=call)
                action = "rewrite"
                rewriter = entry.name
            if progress is not None:
                progress.after_hook(HookStep(entry.name, action, result.reason), call)
        return ToolCallHookResult._trusted(ToolCallAction.PROCEED, call=call, hook=rewriter)

    async def after_tool_call(self, ctx: ToolResultHookContext,
                              progress: HookProgress | None = None) -> ToolResultHookResult:
        """Rewrite the result, inject messages (accumulated), stop after the batch, or abort
        (``progress``: see :meth:`before_model_call`; the messages that recorded hooks
        injected are the caller's to add)."""
        tool_result = ctx.result
        injected: list = []
        current = ctx
        rewriter = None
        for entry in self._for_slot(HookSlot.AFTER_TOOL_CALL):
            result = await self._call_with_progress(entry, HookSlot.AFTER_TOOL_CALL, current, progress, tool_result)
            if result is None:
                continue
            if result.action is ToolResultAction.ABORT:
                self._decision(HookSlot.AFTER_TOOL_CALL, entry.name, "abort", result.reason,
                               tool_result, None, call_id=ctx.call.id)
                if progress is not None:
                    progress.after_hook(_aborted(entry, result), tool_result)
                # With the result as it stood: the call ran, and its answer is kept.
                return dataclasses.replace(result.by(entry.name), result=tool_result)
            action = "proceed"
            if result.result is not None and result.result != tool_result:
                self._decision(HookSlot.AFTER_TOOL_CALL, entry.name, "rewrite", result.reason,
                               tool_result, result.result, call_id=ctx.call.id)
                tool_result = result.result
                current = ctx.copy_with(result=tool_result)
                action = "rewrite"
                rewriter = entry.name
            if result.injected_messages:
                self._decision(HookSlot.AFTER_TOOL_CALL, entry.name, "inject", result.reason,
                               None, result.injected_messages, call_id=ctx.call.id)
                injected.extend(result.injected_messages)
            if result.action is ToolResultAction.STOP:
                self._decision(HookSlot.AFTER_TOOL_CALL, entry.name, "stop", result.reason,
                               None, None, call_id=ctx.call.id)
                action = "stop"
            if progress is not None:
                progress.after_hook(HookStep(entry.name, action, result.reason, tuple(
                    m.model_dump(mode="json") for m in result.injected_messages)), tool_result)
            if action == "stop":
                # Seed 000 §5.4: stop keeps the messages injected so far.
                return ToolResultHookResult.stop(tool_result, injected, result.reason).by(entry.name)
        return ToolResultHookResult._trusted(ToolResultAction.PROCEED, result=tool_result,
                                             injected_messages=tuple(injected), hook=rewriter)

    async def on_turn_completion(self, ctx: TurnCompletionHookContext) -> TurnCompletionHookResult:
        """Accept the turn, ask for another one, or abort."""
        for entry in self._for_slot(HookSlot.ON_TURN_COMPLETION):
            result = await self._call(entry, HookSlot.ON_TURN_COMPLETION, ctx)
            if result is None or result is _FAILED or result.action is TurnCompletionAction.ACCEPT:
                continue
            self._decision(HookSlot.ON_TURN_COMPLETION, entry.name, result.action.value, result.reason,
                           None, result.messages or None)
            return result.by(entry.name)
        return _ACCEPT

    async def before_persist_state(self, ctx: StatePersistenceHookContext) -> StatePersistenceHookResult:
        """Proceed, skip (only when not mandatory) or abort a save."""
        for entry in self._for_slot(HookSlot.BEFORE_PERSIST_STATE):
            result = await self._call(entry, HookSlot.BEFORE_PERSIST_STATE, ctx)
            if result is None or result is _FAILED or result.action is PersistAction.PROCEED:
                continue
            if result.action is PersistAction.SKIP and ctx.mandatory:
                # Seed 000 §9.2: a mandatory write ignores skip (but not abort).
                self._decision(HookSlot.BEFORE_PERSIST_STATE, entry.name, "skip", result.reason,
                               None, None, ignored=True, save_reason=ctx.reason)
                continue
            self._decision(HookSlot.BEFORE_PERSIST_STATE, entry.name, result.action.value, result.reason,
                           None, None, ignored=False, save_reason=ctx.reason)
            return result.by(entry.name)
        return _PERSIST

    # -- observer slots -------------------------------------------------------------

    async def after_persist_state(self, ctx: StatePersistenceHookContext) -> None:
        """Tell observers a save happened; their failures become diagnostics."""
        for entry in self._for_slot(HookSlot.AFTER_PERSIST_STATE):
            await self._call(entry, HookSlot.AFTER_PERSIST_STATE, ctx)

    async def after_run(self, ctx: AfterRunHookContext) -> list[str]:
        """Tell observers the run ended; returns the names of hooks that failed (each also published)."""
        diagnostics: list[str] = []
        for entry in self._for_slot(HookSlot.AFTER_RUN):
            if await self._call(entry, HookSlot.AFTER_RUN, ctx) is _FAILED:
                diagnostics.append(entry.name)
        return diagnostics


_KEPT_REMOVED = 4  # removed messages shown in full up to this many; beyond, only their range


def _request_change(before: Any, after: Any) -> tuple[dict, dict]:
    """What a before_model_call rewrite changed, for its ``hook.decision``: not two copies of
    the request (a compression on a long history would publish the history twice), but
    the changed range of messages. The messages both requests share at the start and the
    end are left out; ``before`` names the range replaced (and its messages when there
    are few), ``after`` the messages put in its place; tools and config in full."""
    old, new = before.messages, after.messages
    limit = min(len(old), len(new))
    start = 0
    while start < limit and (old[start] is new[start] or old[start] == new[start]):
        start += 1
    tail = 0
    while tail < limit - start and (old[-1 - tail] is new[-1 - tail] or old[-1 - tail] == new[-1 - tail]):
        tail += 1
    removed, inserted = old[start:len(old) - tail], new[start:len(new) - tail]
    replaced: dict[str, Any] = {"start": start, "end": start + len(removed), "count": len(removed)}
    if len(removed) <= _KEPT_REMOVED:
        replaced["messages"] = jsonable(removed)
    return ({"message_count": len(old), "replaced": replaced, "tools": [t.name for t in before.tools],
             "config": jsonable(before.config)},
            {"message_count": len(new), "inserted": {"start": start, "messages": jsonable(inserted)},
             "tools": [t.name for t in after.tools], "config": jsonable(after.config)})


def _step(entry: HookEntry, result: Any) -> HookStep:
    """The step of a hook that let the value through (None) or failed (fail-open)."""
    return HookStep(entry.name, "failed" if result is _FAILED else "proceed")


def _deferral(result: Any) -> Any:
    """A defer's item kind and detail as a restore needs them (None for a plain one)."""
    if result.action is not ToolCallAction.DEFER or (result.kind is None and result.detail is None):
        return None
    return {"kind": result.kind, "detail": jsonable(result.detail)}


def _aborted(entry: HookEntry, result: Any) -> HookStep:
    """The step of an abort, with the reason a restore repeats (the error's message if the
    hook gave none)."""
    reason = result.reason or (result.error.message if result.error is not None else None)
    return HookStep(entry.name, "abort", reason)
