"""ev.otel: GenAI spans from a runtime's events, checked with the SDK's in-memory exporter and
end to end through the OTLP/HTTP exporter to a loopback receiver."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import arknb as ark
import arknb.eval as ev

from ._kit import add, add_model

if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    import opentelemetry.sdk  # noqa: F401  (in CI the extra must be installed: fail, never skip)
else:
    pytest.importorskip("opentelemetry.sdk", reason="the arknb[otel] extra is not installed")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as G  # noqa: E402
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _by_name(finished):
    return {s.name: s for s in finished}


async def test_a_run_is_an_invoke_agent_span_with_chat_and_tool_spans_below(spans):
    provider, exporter = spans
    runtime = ark.AgentRuntime(add_model(), tools=[add], config=ark.ModelConfig(model="gpt-test"))
    ev.otel.instrument(runtime, tracer_provider=provider)
    result = await runtime.run("What is 1 + 2?")
    finished = exporter.get_finished_spans()
    assert sorted(s.name for s in finished) == ["chat gpt-test", "chat gpt-test", "execute_tool add", "invoke_agent"]
    run = _by_name(finished)["invoke_agent"]
    children = [s for s in finished if s is not run]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in children)
    assert len({s.context.trace_id for s in finished}) == 1
    assert run.attributes[G.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert run.attributes[G.GEN_AI_CONVERSATION_ID] == runtime.session_id
    assert run.attributes[G.GEN_AI_PROVIDER_NAME] == "arknb.scripted"
    assert run.attributes["arknb.stop_reason"] == "completed" and run.status.status_code is StatusCode.UNSET
    assert (run.attributes[G.GEN_AI_USAGE_INPUT_TOKENS], run.attributes[G.GEN_AI_USAGE_OUTPUT_TOKENS]) == (30, 8)
    chats = sorted((s for s in finished if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert [c.attributes[G.GEN_AI_RESPONSE_FINISH_REASONS] for c in chats] == [("tool_calls",), ("stop",)]
    assert [c.attributes[G.GEN_AI_USAGE_INPUT_TOKENS] for c in chats] == [10, 20]
    assert all(c.attributes[G.GEN_AI_OPERATION_NAME] == "chat" and c.attributes[G.GEN_AI_REQUEST_MODEL] == "gpt-test"
               for c in chats)
    tool = _by_name(finished)["execute_tool add"]
    assert (tool.attributes[G.GEN_AI_OPERATION_NAME], tool.attributes[G.GEN_AI_TOOL_NAME],
            tool.attributes[G.GEN_AI_TOOL_CALL_ID]) == ("execute_tool", "add", "c1")
    # Spans carry the runtime's own event times, in order.
    assert run.start_time <= chats[0].start_time <= chats[0].end_time <= tool.start_time <= chats[1].start_time
    assert chats[1].end_time <= run.end_time and result.stop_reason == "completed"


async def test_a_failed_run_and_a_failed_tool_have_error_status(spans):
    provider, exporter = spans

    @ark.tool
    def explode() -> str:
        """Fails."""
        raise ValueError("kaboom")

    failing = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="e1", name="explode")]),
        ark.ScriptedTurn(error=ark.ArkError("provider", "provider_unavailable", "the model is down")),
    ])
    runtime = ark.AgentRuntime(failing, tools=[explode])
    ev.otel.instrument(runtime, tracer_provider=provider)
    assert (await runtime.run("go")).stop_reason == "failed"
    finished = _by_name(exporter.get_finished_spans())
    run, tool = finished["invoke_agent"], finished["execute_tool explode"]
    assert run.status.status_code is StatusCode.ERROR and "the model is down" in run.status.description
    assert run.attributes[ERROR_TYPE] == "provider_unavailable"
    assert tool.status.status_code is StatusCode.ERROR and tool.attributes[ERROR_TYPE] == "tool_failed"
    chat = sorted((s for s in exporter.get_finished_spans() if s.name.startswith("chat")), key=lambda s: s.start_time)
    # No model configured: a call that answered is named after the model that did; one that failed is plain "chat".
    assert [s.name for s in chat] == ["chat scripted", "chat"]
    assert chat[0].attributes[G.GEN_AI_REQUEST_MODEL] == chat[0].attributes[G.GEN_AI_RESPONSE_MODEL] == "scripted"
    assert chat[1].attributes.get("arknb.unfinished") is True and G.GEN_AI_REQUEST_MODEL not in chat[1].attributes
    assert chat[1].status.status_code is StatusCode.ERROR


async def test_hook_decisions_and_approvals_are_span_events(spans):
    provider, exporter = spans

    @ark.tool(risk="dangerous")
    def wipe(path: str) -> str:
        """Delete a folder."""
        return f"wiped {path}"

    model = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="w1", name="wipe", arguments_json='{"path": "/tmp/a"}')]),
        "Done.",
    ])
    runtime = ark.AgentRuntime(model, tools=[wipe])

    @runtime.hooks.before_tool_call(name="sandbox")
    def sandbox(ctx):
        return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({"path": "/tmp/sandbox/a"}))

    ev.otel.instrument(runtime, tracer_provider=provider)
    first = await runtime.run("clean up")
    assert first.stop_reason == "awaiting_approval"
    approval_id = runtime.state.pending_approval.items[0].approval_id
    await runtime.controller.approve(approval_id)
    assert (await runtime.current_run).stop_reason == "completed"

    finished = exporter.get_finished_spans()
    runs = sorted((s for s in finished if s.name == "invoke_agent"), key=lambda s: s.start_time)
    assert len(runs) == 2
    paused, resumed = runs
    decisions = [e for e in paused.events if e.name == "arknb.hook.decision"]
    assert [(e.attributes["arknb.hook.name"], e.attributes["arknb.hook.action"]) for e in decisions] == [
        ("sandbox", "rewrite"), ("approval_policy", "defer")]
    assert "arknb.approval.required" in [e.name for e in paused.events]
    assert paused.attributes["arknb.stop_reason"] == "awaiting_approval"
    waiting = _by_name(finished)["arknb.approval"]
    assert [e.name for e in waiting.events] == [
        "arknb.approval.required", "arknb.approval.decided", "arknb.approval.resolved"]
    assert waiting.events[1].attributes["arknb.approval.decision"] == "approved"
    assert waiting.parent.span_id == paused.context.span_id
    assert resumed.links and resumed.links[0].context.span_id == paused.context.span_id
    assert resumed.attributes["arknb.resume.reason"] == "approval"
    assert _by_name(finished)["execute_tool wipe"].parent.span_id == resumed.context.span_id


def _all_values(finished) -> str:
    parts = []
    for span in finished:
        parts += [str(v) for v in span.attributes.values()]
        parts += [str(v) for e in span.events for v in e.attributes.values()]
    return "\n".join(parts)


async def test_message_contents_are_recorded_only_with_capture_content(spans):
    provider, exporter = spans

    async def run(capture: bool):
        exporter.clear()
        runtime = ark.AgentRuntime(add_model(final="The sum is 3."), tools=[add])

        @runtime.hooks.before_tool_call
        def private(ctx):  # a rewrite: its before/after values are content too
            return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({"a": 1, "b": 2}))

        ev.otel.instrument(runtime, tracer_provider=provider, capture_content=capture)
        await runtime.run("My secret question: what is 1 + 2?")
        return exporter.get_finished_spans()

    quiet = _all_values(await run(False))
    for text in ("secret question", "The sum is 3.", "Let me add.", '"a":', "arguments_json"):
        assert text not in quiet, text
    loud_spans = await run(True)
    loud = _all_values(loud_spans)
    for text in ("secret question", "The sum is 3.", "Let me add.", "arguments_json"):
        assert text in loud, text
    run_span = _by_name(loud_spans)["invoke_agent"]
    assert "secret question" in run_span.attributes[G.GEN_AI_INPUT_MESSAGES]
    tool = _by_name(loud_spans)["execute_tool add"]
    assert json.loads(tool.attributes[G.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"a": 1, "b": 2}
    assert tool.attributes[G.GEN_AI_TOOL_CALL_RESULT] == "3"


async def test_unsubscribe_stops_and_ends_open_spans(spans):
    provider, exporter = spans
    import asyncio

    gate = asyncio.Event()

    @ark.tool
    async def slow() -> str:
        """Waits."""
        await gate.wait()
        return "ok"

    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="s", name="slow")]), "done"])
    runtime = ark.AgentRuntime(model, tools=[slow])
    stop = ev.otel.instrument(runtime, tracer_provider=provider)
    started = asyncio.Event()
    runtime.bus.subscribe(ark.EventTypes.TOOL_BEFORE, lambda e: started.set())
    handle = runtime.start("go")
    await started.wait()
    stop()
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == ["chat scripted", "execute_tool slow", "invoke_agent"]
    assert all(s.attributes.get("arknb.unfinished") for s in exporter.get_finished_spans() if s.name != "chat scripted")
    gate.set()
    await handle
    assert len(exporter.get_finished_spans()) == 3          # nothing after unsubscribing


def test_instrument_refuses_what_is_not_a_runtime():
    with pytest.raises(ark.ArkError, match="takes an AgentRuntime"):
        ev.otel.instrument(object())


# -- end to end: the OTLP/HTTP exporter to a loopback receiver -------------------------------

class _Receiver(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest, ExportTraceServiceResponse,
        )

        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.received.append((self.path, self.headers.get("Content-Type"), request))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args) -> None:
        pass


async def test_spans_reach_an_otlp_http_receiver(tmp_path):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    received: list = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    provider = TracerProvider()
    try:
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces", timeout=10)
        provider.add_span_processor(BatchSpanProcessor(exporter))
        runtime = ark.AgentRuntime(add_model(), tools=[add], config=ark.ModelConfig(model="gpt-test"))
        ev.otel.instrument(runtime, tracer_provider=provider, agent_name="calculator")
        await runtime.run("What is 1 + 2?")
        assert provider.force_flush(30_000)
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert received, "the receiver got nothing"
    path, content_type, _ = received[0]
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    got = [span for _, _, request in received for rs in request.resource_spans for ss in rs.scope_spans
           for span in ss.spans]
    assert sorted(s.name for s in got) == ["chat gpt-test", "chat gpt-test", "execute_tool add",
                                           "invoke_agent calculator"]
    scope = received[0][2].resource_spans[0].scope_spans[0].scope
    assert scope.name == "arknb" and scope.version == ark.__version__
    run = next(s for s in got if s.name.startswith("invoke_agent"))
    attributes = {a.key: a.value for a in run.attributes}
    assert attributes[G.GEN_AI_AGENT_NAME].string_value == "calculator"
    assert attributes[G.GEN_AI_OPERATION_NAME].string_value == "invoke_agent"
    tool = next(s for s in got if s.name == "execute_tool add")
    assert tool.parent_span_id == run.span_id and tool.trace_id == run.trace_id


def test_without_the_extra_instrument_names_it(monkeypatch):
    from arknb.eval import otel

    monkeypatch.setattr(otel, "_IMPORT_ERROR", ImportError("No module named 'opentelemetry'"))
    with pytest.raises(ark.ArkError) as info:
        otel.instrument(ark.AgentRuntime(add_model(), tools=[add]))
    assert (info.value.layer, info.value.code) == ("config", "otel_unavailable")
    assert "pip install 'arknb[otel]'" in info.value.message


async def test_a_tool_error_text_is_content_and_stays_out_of_the_status_without_capture(spans):
    provider, exporter = spans

    @ark.tool
    def lookup(patient: str) -> ark.ToolResult:
        """Look a patient up."""
        return ark.ToolResult.from_text(f"record of {patient}: diagnosis private-diagnosis-x", is_error=True)

    async def run(capture: bool):
        exporter.clear()
        model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="l1", name="lookup",
                                                                             arguments_json='{"patient": "p7"}')]),
                                   "Sorry."])
        runtime = ark.AgentRuntime(model, tools=[lookup])
        ev.otel.instrument(runtime, tracer_provider=provider, capture_content=capture)
        await runtime.run("look p7 up")
        return _by_name(exporter.get_finished_spans())["execute_tool lookup"]

    quiet = await run(False)
    assert quiet.status.status_code is StatusCode.ERROR
    assert "private-diagnosis-x" not in (quiet.status.description or "")
    assert "private-diagnosis-x" not in _all_values([quiet])
    assert quiet.status.description == f"the tool returned an error ({quiet.attributes[ERROR_TYPE]})"
    loud = await run(True)
    assert "private-diagnosis-x" in loud.status.description
