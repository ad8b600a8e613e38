"""Model phase: before_model_call, the serial stream collector, after_model_call.

The collector handles one streaming event at a time and awaits the chunk hooks before
it asks the stream for the next event, so a drop, rewrite or abort always lands before
``model_complete`` (seed 000 §10.3). What the chunk pipeline lets through is the truth:
the assistant message that enters history is the post-hook text, while the raw model
output stays visible in ``llm.after`` (``raw_text``) and in ``hook.decision`` events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..domain import (
    AgentMessage, ArkError, ContentPart, ErrorCode, ErrorLayer, ModelRequest, ModelResponse, Role,
)
from ..events import EventTypes
from ..events.envelope import flat_items, flat_payload, freeze_payload
from ..hooks import (
    HookSlot, ModelCallAction, ModelCallHookContext, ModelChunkAction,
    ModelResponseAction, ModelResponseHookContext,
)
from ..hooks.contexts import new_chunk_context
from ..hooks.pipeline import jsonable
from ..domain.invocation import HookAbort, ModelOutcome
from ._context import OfRun
from ._context_view import context_of

if TYPE_CHECKING:
    from ..hooks import HookProgress
    from ._context import RunContext
    from ..domain import ToolCallDelta
    from ._redaction import ChunkGuard
    from .runtime import AgentRuntime

__all__ = ["HookAbort", "ModelCall", "abort_error", "call_model"]


def abort_error(slot: str, hook: str | None, reason: str | None, error: ArkError | None) -> HookAbort:
    """The ``hook_abort`` signal for an abort decision in ``slot``."""
    if error is None or error.code != ErrorCode.HOOK_ABORT:
        detail = reason or (error.message if error else "no reason given")
        error = ArkError(ErrorLayer.SECURITY, ErrorCode.HOOK_ABORT,
                         f"hook {hook!r} aborted the run in {slot}: {detail}")
    return HookAbort(error, slot, hook)


async def call_model(rt: AgentRuntime, ctx: RunContext) -> ModelResponse:
    """One model call of the current turn, with bounded retries asked for by hooks.

    Each attempt goes through the runtime's invocation seam, which runs the phases of a
    :class:`ModelCall` (in line, or as a durable operation).
    """
    attempt = 0
    while True:
        outcome = await rt._invocations.model_call(ModelCall(rt, ctx, attempt))
        if not outcome.retry:
            return outcome.response
        attempt += 1


class ModelCall(OfRun):
    """The phases of one model call attempt: request hooks, the stream, response hooks.

    A seam calls :meth:`before`, then :meth:`execute` (unless a hook answered), then
    :meth:`after`; a durable seam may run them in different processes, so each phase
    takes what it needs as arguments.
    """

    __slots__ = ("rt", "ctx", "attempt", "request", "hook", "ran_after")

    def __init__(self, rt: AgentRuntime, ctx: RunContext, attempt: int) -> None:
        self.rt = rt
        self.ctx = ctx
        self.attempt = attempt
        self.request: ModelRequest | None = None
        self.hook: str | None = None  # the hook that rewrote the request or answered it
        self.ran_after = False  # after() ran in this process (else a seam reuses a committed outcome)

    @property
    def has_response_hooks(self) -> bool:
        """True if an after_model_call hook may change the response (else after() is bookkeeping)."""
        return self.rt._pipeline.has(HookSlot.AFTER_MODEL_CALL)

    async def before(self, progress: HookProgress | None = None,
                     request: ModelRequest | None = None) -> tuple[ModelRequest, ModelResponse | None]:
        """before_model_call: the request to send, or a hook's own response.

        A durable seam passes ``progress`` (each hook's decision is recorded as it is
        made) and, continuing a call an earlier process began, the ``request`` its
        recorded hooks made (those hooks are skipped).
        """
        rt, ctx = self.rt, self.ctx
        pipeline = rt._pipeline
        if request is None:
            await rt.tools.refresh()  # tool sources connect on first use, re-list after a change (§15)
            request = rt._build_request()
        responded = None
        if pipeline.has(HookSlot.BEFORE_MODEL_CALL):
            decision = await pipeline.before_model_call(ModelCallHookContext(
                session_id=rt.session_id, run_id=ctx.run_id, state=rt.state, request=request, turn=ctx.turn),
                progress)
            if decision.action is ModelCallAction.ABORT:
                raise abort_error("before_model_call", decision.hook, decision.reason, decision.error)
            if decision.action is ModelCallAction.RESPOND:
                responded = decision.response
                self.hook = decision.hook
            elif decision.request is not None:
                if decision.request is not request:
                    self.hook = decision.hook
                request = decision.request
        view = None
        if responded is None:  # what the model will see, against the raw history (DESIGN §16)
            version, changes, view = context_of(request.messages, rt.state.history, rt._system, self.hook,
                                                getattr(rt._extensions, "last_sections", ()))
            named = request.context_changes  # changes a hook declared itself (an executor's private scope)
            if named:
                view = [{**c.model_dump(mode="json"), "before": [], "after": []} for c in named] + view
            request = request.model_copy(update={"context_version": version, "context_changes": named + changes})
        self.request = request
        attempt = self.attempt
        rt._emit(EventTypes.LLM_BEFORE, lambda: flat_payload(
            turn=ctx.turn, attempt=attempt, model=request.config.model or None,
            message_count=len(request.messages), tools=flat_items(t.name for t in request.tools),
            responded_by_hook=responded is not None,
            **({"context": freeze_payload({"version": request.context_version, "changes": view})}
               if view else {})))
        return request, responded

    async def execute(self, request: ModelRequest | None = None) -> tuple[ModelResponse, str, str]:
        """Stream the model: (post-chunk-hook response, raw text, raw reasoning)."""
        if request is None:
            request = self.request if self.request is not None else self.rt._build_request()
        return await _collect(self.rt, self.ctx, request)

    async def after(self, response: ModelResponse, raw_text: str, raw_reasoning: str,
                    progress: HookProgress | None = None) -> ModelOutcome:
        """after_model_call: the effective response, or a retry (``progress``: see :meth:`before`;
        ``response`` is then the one the recorded hooks made)."""
        rt, ctx, attempt = self.rt, self.ctx, self.attempt
        pipeline = rt._pipeline
        ctx.usage = ctx.usage + response.usage
        if pipeline.has(HookSlot.AFTER_MODEL_CALL):
            decision = await pipeline.after_model_call(ModelResponseHookContext(
                session_id=rt.session_id, run_id=ctx.run_id, state=rt.state, response=response,
                turn=ctx.turn, attempt=attempt), progress)
            if decision.action is ModelResponseAction.ABORT:
                raise abort_error("after_model_call", decision.hook, decision.reason, decision.error)
            if decision.action is ModelResponseAction.RETRY:
                if attempt < rt.max_model_retries:
                    self.hook = decision.hook
                    rt._emit(EventTypes.LLM_AFTER, lambda: _after_payload(ctx, response, raw_text, raw_reasoning,
                                                                          retried=True))
                    return ModelOutcome(response, retry=True)
                raise ArkError(ErrorLayer.RUNTIME, ErrorCode.MODEL_RETRIES_EXHAUSTED,
                               f"hook {decision.hook!r} asked for a retry, but the model was already retried "
                               f"{rt.max_model_retries} time(s) in this turn")
            if decision.response is not None:
                if decision.response is not response:
                    self.hook = decision.hook
                response = decision.response
        rt._emit(EventTypes.LLM_AFTER, lambda: _after_payload(ctx, response, raw_text, raw_reasoning))
        return ModelOutcome(response)

    def reuse(self, outcome: ModelOutcome, raw_text: str, raw_reasoning: str) -> ModelOutcome:
        """A committed outcome found after a restore: counted and announced, nothing runs again."""
        self.ctx.usage = self.ctx.usage + outcome.response.usage
        ctx, response = self.ctx, outcome.response
        self.rt._emit(EventTypes.LLM_AFTER, lambda: {**_after_payload(ctx, response, raw_text, raw_reasoning,
                                                                      retried=outcome.retry), "reused": True})
        return outcome


def _after_payload(ctx: RunContext, response: ModelResponse, raw_text: str, raw_reasoning: str,
                   retried: bool = False) -> dict:
    # Built frozen: the message dump is frozen (and kept for turn.completed), the rest scalars.
    answered_by = {"model": response.model} if response.model else {}  # (the request may name no model)
    return flat_payload(turn=ctx.turn, message=jsonable(response.message), finish_reason=response.finish_reason.value,
                        usage=flat_payload(response.usage.model_dump()), raw_text=raw_text,
                        raw_reasoning=raw_reasoning, retried=retried, **answered_by)


async def _collect(rt: AgentRuntime, ctx: RunContext, request: ModelRequest) -> tuple[ModelResponse, str, str]:
    """Consume the model stream serially; return (post-hook response, raw text, raw reasoning)."""
    pipeline = rt._pipeline
    hooked = pipeline.has(HookSlot.ON_MODEL_CHUNK)
    bus = rt.bus
    emit = rt._emit
    raw_text: list[str] = []
    raw_reasoning: list[str] = []
    out_text: list[str] = []
    out_reasoning: list[str] = []
    held_text = held_reasoning = ""
    changed = False  # did any chunk hook hold, drop or rewrite anything in this turn?
    index = 0
    complete: ModelResponse | None = None
    # No configured secret nor credential shape leaves in a chunk, even split across
    # chunks. A key is learnt when the model resolves it, after this point: the guard is
    # asked per chunk.
    guard = rt._redactor.chunk_guard()
    calls: dict[int, list] = {}  # tool-call index -> [id, name, held fragments] as streamed so far
    stream = rt.model.stream(request, cancel=ctx.cancel)
    try:
        async for event in stream:
            kind = event.type
            if kind == "text_delta" or kind == "reasoning_delta":
                is_text = kind == "text_delta"
                (raw_text if is_text else raw_reasoning).append(event.text)
                if not hooked:
                    # The raw text is the history text here; publish only if someone listens.
                    channel = "text" if is_text else "reasoning"
                    text = guard.feed(channel, event.text)
                    if text and bus.has_listeners(EventTypes.LLM_CHUNK):
                        rt._publish(EventTypes.LLM_CHUNK, flat_payload(kind=channel, text=text, index=index))
                    index += 1
                    continue
                text = held_text + (event.text if is_text else "")
                reasoning = held_reasoning + ("" if is_text else event.text)
                decision = await pipeline.filter_chunk(new_chunk_context(
                    rt.session_id, ctx.run_id, rt.state, text, reasoning, index, False, ctx.turn))
                held_text = held_reasoning = ""
                if decision is not None:  # a hook changed something
                    changed = True
                    action = decision.action
                    if action is ModelChunkAction.ABORT:
                        raise abort_error("on_model_chunk", decision.hook, decision.reason, decision.error)
                    if action is ModelChunkAction.HOLD:
                        held_text, held_reasoning = text, reasoning
                        continue
                    if action is ModelChunkAction.DROP:
                        index += 1
                        continue
                    text, reasoning = decision.text or "", decision.reasoning or ""
                _deliver(rt, guard, text, reasoning, index, out_text, out_reasoning)
                index += 1
            elif kind == "tool_call_delta":
                # Streamed as it comes (hooks see text only); the arguments are guarded like text.
                _tool_call_chunk(rt, guard, calls, event)
            elif kind == "model_complete":
                complete = event.response
            elif kind == "retry":
                emit(EventTypes.LLM_RETRY, {"turn": ctx.turn, "attempt": event.attempt, "delay": event.delay,
                                            "error": event.error.model_dump(mode="json"),
                                            "reason": getattr(event, "reason", None)})
            elif kind == "error":
                raise event.error.to_error()
        if held_text or held_reasoning:
            # Whatever a hook still holds is offered once more, marked final.
            decision = await pipeline.on_model_chunk(new_chunk_context(
                rt.session_id, ctx.run_id, rt.state, held_text, held_reasoning, index, True, ctx.turn))
            if decision.action is ModelChunkAction.ABORT:
                raise abort_error("on_model_chunk", decision.hook, decision.reason, decision.error)
            if decision.action is not ModelChunkAction.DROP:
                _deliver(rt, guard, decision.text or "", decision.reasoning or "", index, out_text, out_reasoning)
        for kind in ("reasoning", "text"):  # what the guard still holds is never a whole secret
            tail = guard.flush(kind)
            if tail and bus.has_listeners(EventTypes.LLM_CHUNK):
                rt._publish(EventTypes.LLM_CHUNK, flat_payload(kind=kind, text=tail, index=index))
        for call_index, (call_id, name, held) in calls.items():
            tail = guard.flush(f"tool_call:{call_index}")
            if held:  # the whole arguments, where an escaped or split key shows (see _tool_call_chunk)
                tail += rt._redactor.value("".join(held), "llm.chunk")
            if tail and bus.has_listeners(EventTypes.LLM_CHUNK):
                rt._publish(EventTypes.LLM_CHUNK, flat_payload(kind="tool_call", text=tail, index=call_index,
                                                               call_id=call_id, name=name))
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    if complete is None:
        raise ArkError(ErrorLayer.PROVIDER, ErrorCode.PROVIDER_STREAM_INCOMPLETE,
                       "the model stream ended without model_complete; its partial output was not kept")
    if not changed:
        # Every chunk went through as the model sent it: the history text is the raw text.
        return complete, "".join(raw_text), "".join(raw_reasoning)
    text = "".join(out_text)
    reasoning = "".join(out_reasoning)
    message = AgentMessage.model_construct(
        role=Role.ASSISTANT, contents=(ContentPart.from_text(text),) if text else (), tool_call_id=None,
        tool_calls=complete.message.tool_calls,
        reasoning=(ContentPart.from_text(reasoning),) if reasoning else (), is_error=False)
    return complete.model_copy(update={"message": message}), "".join(raw_text), "".join(raw_reasoning)


def _deliver(rt: AgentRuntime, guard: ChunkGuard, text: str, reasoning: str, index: int, out_text: list,
             out_reasoning: list) -> None:
    listening = rt.bus.has_listeners(EventTypes.LLM_CHUNK)
    if reasoning:
        out_reasoning.append(reasoning)
        published = guard.feed("reasoning", reasoning)
        if listening and published:
            rt._publish(EventTypes.LLM_CHUNK, flat_payload(kind="reasoning", text=published, index=index))
    if text:
        out_text.append(text)
        published = guard.feed("text", text)
        if listening and published:
            rt._publish(EventTypes.LLM_CHUNK, flat_payload(kind="text", text=published, index=index))


def _tool_call_chunk(rt: AgentRuntime, guard: ChunkGuard, calls: dict[int, list], event: ToolCallDelta) -> None:
    """Publish one tool-call delta as ``llm.chunk`` kind ``tool_call``: ``index`` (the call's
    index in the message), ``call_id`` and ``name`` (as streamed so far; ``None`` until the
    provider sent them) and ``text`` (the arguments fragment, redacted like answer text)."""
    call = calls.get(event.index)
    if call is None:
        call = calls[event.index] = [None, None, []]
    if event.id and call[0] is None:
        call[0] = event.id
    if event.name:
        call[1] = event.name if call[1] is None or event.name == call[1] else call[1] + event.name
    fragment = event.arguments_delta or ""
    if fragment and (call[2] or rt._redactor.lint.known_values):
        # With secrets configured, a model can write one JSON-escaped (\uXXXX) or split across
        # the arguments' strings, which only the whole arguments show: they are held and
        # published, redacted, when the message completes (issue 26: no sink holds the key).
        call[2].append(fragment)
        text = ""
    else:
        text = guard.feed(f"tool_call:{event.index}", fragment) if fragment else ""
    if (text or event.id or event.name) and rt.bus.has_listeners(EventTypes.LLM_CHUNK):
        rt._publish(EventTypes.LLM_CHUNK, flat_payload(kind="tool_call", text=text, index=event.index,
                                                       call_id=call[0], name=call[1]))
