"""OpenTelemetry spans from a runtime's events, per the GenAI semantic conventions (DESIGN §11).

``unsubscribe = ev.otel.instrument(runtime)`` turns each run into an ``invoke_agent``
span with a ``chat {model}`` span per model call and an ``execute_tool {name}`` span
per tool call below it. Hook decisions become ``arknb.hook.decision`` span events and
approval events events named after their type (``arknb.approval.required``, ...), on
an ``arknb.approval`` span that lasts while the batch waits for a person. A run's
continuation after its approvals is a child span of the run it continues (and linked to
it), so a paused run and its continuations are one trace. Across processes (a restore in
a new kernel) too: the span of a run's first part gets ids derived from the session and
run ids, and a continuation whose process never saw that span names it as its parent by
the same derivation (with the SDK's tracer; it is a child of a span the backend got from
the first process, if that process was instrumented). A model call that failed carries the provider's error
on its own span (status and an ``exception`` event). Attribute
names are the ``opentelemetry-semantic-conventions`` package's constants. Message
contents (prompts, answers, tool arguments and results, hook before/after values)
are recorded only with ``capture_content=True``.

It only observes: a bus listener never changes a run. Needs the optional extra
``pip install 'arknb[otel]'``; plug any exporter into the tracer provider (OTLP for
Phoenix, Langfuse or Jaeger).

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider                        # doctest: +SKIP
    >>> unsubscribe = ev.otel.instrument(runtime, tracer_provider=TracerProvider())  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from ..domain import ArkError, ErrorCode, ErrorLayer, invalid_argument
from ..events import AgentEvent, EventTypes

try:
    from opentelemetry import trace as _trace
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _gen_ai
    from opentelemetry.semconv.attributes import error_attributes as _error
    from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
except ImportError as _missing:  # the optional extra is not installed
    _IMPORT_ERROR: ImportError | None = _missing
else:
    _IMPORT_ERROR = None

__all__ = ["instrument"]

_RUN_ENDS = {
    EventTypes.AGENT_SUCCESS: "success", EventTypes.AGENT_ERROR: "error", EventTypes.AGENT_ABORTED: "error",
    EventTypes.AGENT_CANCELLED: "cancelled", EventTypes.AGENT_SUSPENDED: "suspended",
}
_APPROVAL_EVENTS = (EventTypes.APPROVAL_REQUIRED, EventTypes.APPROVAL_DECIDED, EventTypes.APPROVAL_RESOLVED)
_KEPT_RUNS = 64  # ended run spans remembered so a resumed run can link to the one it continues


def _ns(event: AgentEvent) -> int:
    return int(event.timestamp * 1_000_000_000)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def _provider_name(model: Any) -> str:
    """The ``gen_ai.provider.name`` of a model, looking through Recorder / fork wrappers."""
    for _ in range(6):
        profile = getattr(model, "profile", None)
        provider = getattr(profile, "provider_id", None)
        if isinstance(provider, str) and provider:
            return provider
        inner = getattr(model, "client", None) or getattr(model, "then", None)
        if inner is None:
            break
        model = inner
    name = type(model).__name__
    return {"ScriptedModel": "arknb.scripted", "ReplayModel": "arknb.replay"}.get(name, name.lower())


def _model_name(model: Any) -> str | None:
    for _ in range(6):
        name = getattr(model, "model", None)
        if isinstance(name, str) and name:
            return name
        inner = getattr(model, "client", None) or getattr(model, "then", None)
        if inner is None:
            return None
        model = inner
    return None


def _run_ids(session_id: str, run_id: str) -> tuple[int, int]:
    """The (trace id, span id) of the span of a run's first part, derived from its ids: a
    continuation in another process (a restore) names that span as its parent."""
    digest = hashlib.sha256(f"arknb-run:{session_id}:{run_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


class _RunIds:
    """Our tracer's id generator, with one addition: the next root span (a run's first
    part) gets the ids :func:`_run_ids` derives, once, when ``pending`` is set."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.pending: tuple[int, int] | None = None

    def generate_trace_id(self) -> int:
        return self.pending[0] if self.pending is not None else self.inner.generate_trace_id()

    def __getattr__(self, name: str) -> Any:  # the rest of the generator's interface (is_trace_id_random, ...)
        return getattr(self.inner, name)

    def generate_span_id(self) -> int:
        if self.pending is not None:
            span_id, self.pending = self.pending[1], None
            return span_id
        return self.inner.generate_span_id()


@dataclass
class _Run:
    span: Any
    model: Any = None
    tools: dict[str, Any] = field(default_factory=dict)


class _Instrumentation:
    """The bus listener: one open span per run, model call, tool call and waiting approval batch."""

    def __init__(self, runtime: Any, tracer: Any, capture_content: bool, agent_name: str | None) -> None:
        self.tracer = tracer
        # The SDK's tracer makes ids through its id_generator: ours derives a run's first
        # span's ids (see _run_ids). Another tracer (no SDK): continuations link in-process only.
        inner = getattr(tracer, "id_generator", None)
        self.ids = _RunIds(inner) if inner is not None else None
        if self.ids is not None:
            tracer.id_generator = self.ids
        self.capture = capture_content
        self.agent_name = agent_name
        self.provider = _provider_name(runtime.model)
        self.default_model = _model_name(runtime.model)
        self.runs: dict[str, _Run] = {}
        self.ended: OrderedDict[str, Any] = OrderedDict()
        self.approvals: dict[str, Any] = {}

    # -- helpers -------------------------------------------------------------------------

    def _common(self, operation: str, event: AgentEvent) -> dict[str, Any]:
        return {_gen_ai.GEN_AI_OPERATION_NAME: operation, _gen_ai.GEN_AI_PROVIDER_NAME: self.provider,
                _gen_ai.GEN_AI_CONVERSATION_ID: event.session_id}

    def _context(self, run: _Run | None) -> Any:
        return _trace.set_span_in_context(run.span) if run is not None else None

    def _innermost(self, event: AgentEvent) -> Any:
        run = self.runs.get(event.run_id)
        if run is None:
            return None
        return run.model if run.model is not None else run.span

    def _fail(self, span: Any, code: str | None, message: str) -> None:
        span.set_status(Status(StatusCode.ERROR, message))
        span.set_attribute(_error.ERROR_TYPE, code or _error.ErrorTypeValues.OTHER.value)

    # -- the listener --------------------------------------------------------------------

    def __call__(self, event: AgentEvent) -> None:
        kind = event.type
        if kind in (EventTypes.AGENT_STARTED, EventTypes.AGENT_RESUMED):
            self._start_run(event)
        elif kind == EventTypes.LLM_BEFORE:
            self._start_model(event)
        elif kind == EventTypes.LLM_RETRY:
            span = self._innermost(event)
            if span is not None:
                error = event.payload.get("error") or {}
                span.add_event("arknb.llm.retry", {"arknb.retry.attempt": int(event.payload.get("attempt") or 0),
                                                   "arknb.retry.delay_s": float(event.payload.get("delay") or 0.0),
                                                   _error.ERROR_TYPE: str(error.get("code") or "")},
                               timestamp=_ns(event))
        elif kind == EventTypes.LLM_AFTER:
            self._end_model(event)
        elif kind == EventTypes.TOOL_BEFORE:
            self._start_tool(event)
        elif kind == EventTypes.TOOL_AFTER:
            self._end_tool(event)
        elif kind == EventTypes.TOOL_DENIED:
            self._run_event(event, "arknb.tool.denied", self._call_attributes(event.payload.get("call"), {
                "arknb.tool.denied.reason": str(event.payload.get("reason") or ""),
                "arknb.hook.name": str(event.payload.get("hook") or "")}))
        elif kind == EventTypes.HOOK_DECISION:
            self._hook_decision(event)
        elif kind == EventTypes.HOOK_DIAGNOSTIC:
            span = self._innermost(event)
            if span is not None:
                p = event.payload
                span.add_event("arknb.hook.diagnostic", {"arknb.hook.slot": str(p.get("slot") or ""),
                                                         "arknb.hook.name": str(p.get("hook") or ""),
                                                         "arknb.hook.diagnostic.kind": str(p.get("kind") or ""),
                                                         "arknb.hook.diagnostic.message": str(p.get("message") or "")},
                               timestamp=_ns(event))
        elif kind in _APPROVAL_EVENTS:
            self._approval(event)
        elif kind == EventTypes.LOOP_DETECTED:
            self._run_event(event, "arknb.loop.detected", {_gen_ai.GEN_AI_TOOL_NAME: str(event.payload.get("tool") or ""),
                                                           "arknb.loop.count": int(event.payload.get("count") or 0)})
        elif kind == EventTypes.STATE_PERSISTED and event.payload.get("ok") is False:
            error = event.payload.get("error") or {}
            self._run_event(event, "arknb.state.save_failed", {"arknb.state.reason": str(event.payload.get("reason")),
                                                               _error.ERROR_TYPE: str(error.get("code") or "")})
        elif kind in _RUN_ENDS:
            self._end_run(event)

    def _run_event(self, event: AgentEvent, name: str, attributes: dict[str, Any]) -> None:
        run = self.runs.get(event.run_id)
        if run is not None:
            run.span.add_event(name, attributes, timestamp=_ns(event))

    def _start_run(self, event: AgentEvent) -> None:
        stale = self.runs.pop(event.run_id, None)
        if stale is not None:
            stale.span.end(end_time=_ns(event))
        p = event.payload
        attributes = self._common("invoke_agent", event)
        attributes["arknb.run_id"] = event.run_id
        if self.default_model:
            attributes[_gen_ai.GEN_AI_REQUEST_MODEL] = self.default_model
        if self.agent_name:
            attributes[_gen_ai.GEN_AI_AGENT_NAME] = self.agent_name
        links = []
        parent = None
        if event.type == EventTypes.AGENT_RESUMED:
            attributes["arknb.resume.reason"] = str(p.get("reason") or "")
            previous = p.get("previous_run_id")
            if previous:
                attributes["arknb.resume.previous_run_id"] = str(previous)
                prior = self.ended.get(previous)
                if prior is not None:
                    # One trace per run, continuations included (issue 26): the continuation's
                    # span is a child of the span of the run it continues, and linked to it.
                    links.append(Link(prior.get_span_context()))
                    parent = _trace.set_span_in_context(prior)
                elif self.ids is not None:
                    # Continued in another process (a restore): the parent is the span of the
                    # run's first part, whose ids the first process derived the same way.
                    trace_id, span_id = _run_ids(event.session_id, str(previous))
                    remote = SpanContext(trace_id, span_id, is_remote=True,
                                         trace_flags=TraceFlags(TraceFlags.SAMPLED))
                    links.append(Link(remote))
                    parent = _trace.set_span_in_context(NonRecordingSpan(remote))
        elif self.capture and p.get("input") is not None:
            attributes[_gen_ai.GEN_AI_INPUT_MESSAGES] = _json(p.get("input"))
        name = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
        if parent is None and self.ids is not None:
            self.ids.pending = _run_ids(event.session_id, event.run_id)
        try:
            span = self.tracer.start_span(name, context=parent, kind=SpanKind.INTERNAL, attributes=attributes,
                                          links=links, start_time=_ns(event))
        finally:
            if self.ids is not None:
                self.ids.pending = None
        self.runs[event.run_id] = _Run(span)

    def _start_model(self, event: AgentEvent) -> None:
        run = self.runs.get(event.run_id)
        p = event.payload
        model = p.get("model") or self.default_model
        attributes = self._common("chat", event)
        if model:
            attributes[_gen_ai.GEN_AI_REQUEST_MODEL] = str(model)
        attributes["arknb.turn"] = int(p.get("turn") or 0)
        attributes["arknb.attempt"] = int(p.get("attempt") or 0)
        if p.get("responded_by_hook"):
            attributes["arknb.responded_by_hook"] = True
        span = self.tracer.start_span(f"chat {model}" if model else "chat", context=self._context(run),
                                      kind=SpanKind.CLIENT, attributes=attributes, start_time=_ns(event))
        if run is None:  # a model call outside a run we saw start (instrumented mid-run)
            span.end(end_time=_ns(event))
            return
        if run.model is not None:
            run.model.end(end_time=_ns(event))
        run.model = span

    def _end_model(self, event: AgentEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None or run.model is None:
            return
        span, run.model = run.model, None
        p = event.payload
        answered_by = p.get("model")
        if answered_by:
            span.set_attribute(_gen_ai.GEN_AI_RESPONSE_MODEL, str(answered_by))
            if span.attributes.get(_gen_ai.GEN_AI_REQUEST_MODEL) is None:
                # No model configured (a ScriptedModel, a client's default): the span is
                # named after the model that answered, as the spec names it after the model.
                span.set_attribute(_gen_ai.GEN_AI_REQUEST_MODEL, str(answered_by))
                span.update_name(f"chat {answered_by}")
        usage = p.get("usage") or {}
        span.set_attribute(_gen_ai.GEN_AI_USAGE_INPUT_TOKENS, int(usage.get("input_tokens") or 0))
        span.set_attribute(_gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, int(usage.get("output_tokens") or 0))
        if p.get("finish_reason"):
            span.set_attribute(_gen_ai.GEN_AI_RESPONSE_FINISH_REASONS, [str(p["finish_reason"])])
        if p.get("retried"):
            span.set_attribute("arknb.retried_by_hook", True)
        if self.capture and p.get("message") is not None:
            span.set_attribute(_gen_ai.GEN_AI_OUTPUT_MESSAGES, _json([p["message"]]))
        span.end(end_time=_ns(event))

    def _call_attributes(self, call: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        call = call if isinstance(call, dict) else {}
        attributes = {_gen_ai.GEN_AI_TOOL_NAME: str(call.get("name") or ""),
                      _gen_ai.GEN_AI_TOOL_CALL_ID: str(call.get("id") or "")}
        attributes.update(extra or {})
        return attributes

    def _start_tool(self, event: AgentEvent) -> None:
        run = self.runs.get(event.run_id)
        call = event.payload.get("call") or {}
        attributes = self._common("execute_tool", event)
        attributes.update(self._call_attributes(call, {_gen_ai.GEN_AI_TOOL_TYPE: "function"}))
        if self.capture:
            attributes[_gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = str(call.get("arguments_json") or "{}")
        span = self.tracer.start_span(f"execute_tool {call.get('name') or ''}".strip(), context=self._context(run),
                                      kind=SpanKind.INTERNAL, attributes=attributes, start_time=_ns(event))
        if run is None:
            span.end(end_time=_ns(event))
            return
        run.tools[str(call.get("id") or "")] = span

    def _end_tool(self, event: AgentEvent) -> None:
        run = self.runs.get(event.run_id)
        call = event.payload.get("call") or {}
        span = run.tools.pop(str(call.get("id") or ""), None) if run is not None else None
        if span is None:
            return
        result = event.payload.get("result") or {}
        if result.get("is_error"):
            code = result.get("error_code") or "tool_error"
            # The result's text is content (it may quote a file, a record, a secret): only with capture_content.
            detail = str(result.get("text") or "")[:500] if self.capture else ""
            self._fail(span, code, detail or f"the tool returned an error ({code})")
        if self.capture:
            span.set_attribute(_gen_ai.GEN_AI_TOOL_CALL_RESULT, str(result.get("text") or ""))
        span.end(end_time=_ns(event))

    def _hook_decision(self, event: AgentEvent) -> None:
        span = self._innermost(event)
        if span is None:
            return
        p = event.payload
        attributes = {"arknb.hook.slot": str(p.get("slot") or ""), "arknb.hook.name": str(p.get("hook") or ""),
                      "arknb.hook.action": str(p.get("action") or ""), "arknb.hook.reason": str(p.get("reason") or "")}
        if p.get("call_id"):
            attributes[_gen_ai.GEN_AI_TOOL_CALL_ID] = str(p["call_id"])
        if self.capture:
            attributes["arknb.hook.before"] = _json(p.get("before"))
            attributes["arknb.hook.after"] = _json(p.get("after"))
        span.add_event("arknb.hook.decision", attributes, timestamp=_ns(event))

    def _approval(self, event: AgentEvent) -> None:
        p = event.payload
        batch = str(p.get("batch_id") or "")
        name = f"arknb.{event.type}"
        if event.type == EventTypes.APPROVAL_REQUIRED:
            items = p.get("items") or []
            tools = [str((i.get("tool_call") or {}).get("name") or "") for i in items if isinstance(i, dict)]
            attributes = {"arknb.approval.batch_id": batch, "arknb.approval.count": len(items),
                          "arknb.approval.tools": tools}
            self._run_event(event, name, attributes)
            run = self.runs.get(event.run_id)
            waiting = self.tracer.start_span("arknb.approval", context=self._context(run), kind=SpanKind.INTERNAL,
                                             attributes={**self._common("invoke_agent", event), **attributes},
                                             start_time=_ns(event))
            waiting.add_event(name, attributes, timestamp=_ns(event))
            previous = self.approvals.pop(batch, None)
            if previous is not None:
                previous.end(end_time=_ns(event))
            self.approvals[batch] = waiting
            return
        span = self.approvals.get(batch)
        if span is None:
            return
        attributes = {"arknb.approval.batch_id": batch}
        if event.type == EventTypes.APPROVAL_DECIDED:
            attributes.update({"arknb.approval.id": str(p.get("approval_id") or ""),
                               "arknb.approval.decision": str(p.get("decision") or ""),
                               "arknb.approval.all_decided": bool(p.get("all_decided"))})
            if self.capture and p.get("deny_reason"):
                attributes["arknb.approval.deny_reason"] = str(p["deny_reason"])
        span.add_event(name, attributes, timestamp=_ns(event))
        if event.type == EventTypes.APPROVAL_RESOLVED:
            self.approvals.pop(batch, None)
            span.end(end_time=_ns(event))

    def _end_run(self, event: AgentEvent) -> None:
        run = self.runs.pop(event.run_id, None)
        if run is None:
            return
        p = event.payload
        end = _ns(event)
        outcome = _RUN_ENDS[event.type]
        span = run.span
        stop = p.get("stop_reason") or ("cancelled" if outcome == "cancelled" else p.get("reason"))
        if stop:
            span.set_attribute("arknb.stop_reason", str(stop))
        usage = p.get("usage") or {}
        if usage:
            span.set_attribute(_gen_ai.GEN_AI_USAGE_INPUT_TOKENS, int(usage.get("input_tokens") or 0))
            span.set_attribute(_gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, int(usage.get("output_tokens") or 0))
        error = p.get("error") if isinstance(p.get("error"), dict) else None
        failed = outcome == "error"
        code, message = (error or {}).get("code"), str((error or {}).get("message") or "")
        if run.model is not None:
            # The model call the run failed in: its span carries the provider's own error.
            run.model.set_attribute("arknb.unfinished", True)
            if failed:
                self._fail(run.model, code, message or "the run ended before this call finished")
                if message:
                    run.model.add_event("exception", {"exception.type": str(code or "error"),
                                                      "exception.message": message}, timestamp=end)
            run.model.end(end_time=end)
        for child in run.tools.values():
            child.set_attribute("arknb.unfinished", True)
            if failed:
                self._fail(child, code, "the run ended before this call finished")
            child.end(end_time=end)
        if failed:
            self._fail(span, (error or {}).get("code"), str((error or {}).get("message") or stop or "the run failed"))
            if event.type == EventTypes.AGENT_ABORTED:
                span.set_attribute("arknb.hook.slot", str(p.get("slot") or ""))
                span.set_attribute("arknb.hook.name", str(p.get("hook") or ""))
        elif outcome == "success" and self.capture and p.get("text"):
            span.set_attribute(_gen_ai.GEN_AI_OUTPUT_MESSAGES,
                               _json([{"role": "assistant", "contents": [{"text": p["text"]}]}]))
        span.end(end_time=end)
        self.ended[event.run_id] = span
        while len(self.ended) > _KEPT_RUNS:
            self.ended.popitem(last=False)

    def close(self) -> None:
        """End whatever is still open (the instrumentation is being removed)."""
        for run in self.runs.values():
            for child in [run.model, *run.tools.values()]:
                if child is not None:
                    child.set_attribute("arknb.unfinished", True)
                    child.end()
            run.span.set_attribute("arknb.unfinished", True)
            run.span.end()
        for span in self.approvals.values():
            span.end()
        self.runs.clear()
        self.approvals.clear()


def instrument(runtime: Any, tracer_provider: Any = None, capture_content: bool = False, *,
               agent_name: str | None = None) -> Callable[[], None]:
    """Send ``runtime``'s runs to OpenTelemetry as GenAI spans; returns the function that stops it.

    Args:
        runtime: an ``AgentRuntime`` (its bus is observed, nothing else is touched).
        tracer_provider: an SDK ``TracerProvider``; by default the global one
            (``opentelemetry.trace.get_tracer_provider()``).
        capture_content: also record prompts, answers, tool arguments and results and
            hook before/after values (off by default: they may be sensitive).
        agent_name: ``gen_ai.agent.name`` (the run span is then ``invoke_agent {name}``).

    Returns:
        ``unsubscribe()``: stops observing and ends any span still open.
    """
    if _IMPORT_ERROR is not None:
        raise ArkError(ErrorLayer.CONFIG, ErrorCode.OTEL_UNAVAILABLE,
                       f"ev.otel needs OpenTelemetry ({_IMPORT_ERROR}): pip install 'arknb[otel]'")
    bus = getattr(runtime, "bus", None)
    if bus is None or not callable(getattr(bus, "subscribe", None)):
        raise invalid_argument(f"instrument(runtime) takes an AgentRuntime, got {type(runtime).__name__}")
    if not isinstance(capture_content, bool):
        raise invalid_argument(f"capture_content must be a bool, got {capture_content!r}")
    from ._version import arknb_version

    tracer = _trace.get_tracer("arknb", arknb_version(), tracer_provider=tracer_provider)
    listener = _Instrumentation(runtime, tracer, capture_content, agent_name)
    unsubscribe = bus.subscribe(EventTypes.ANY, listener)

    def stop() -> None:
        unsubscribe()
        listener.close()

    return stop
