"""Traces a consumer understands (issue 26 item 6): a run paused for approvals and its
continuations are one trace (the continuation's span is a child of the paused run's,
linked to it too), checked with the SDK's in-memory exporter and at an OTLP/HTTP receiver
on 127.0.0.1; a failed model span carries the provider's error message."""

from __future__ import annotations

import os
import threading
from http.server import ThreadingHTTPServer

import pytest

import arknb as ark
import arknb.eval as ev

if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    import opentelemetry.sdk  # noqa: F401  (in CI the extra must be installed: fail, never skip)
else:
    pytest.importorskip("opentelemetry.sdk", reason="the arknb[otel] extra is not installed")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from .test_otel import _Receiver  # noqa: E402


@ark.tool(risk="dangerous")
def wipe(path: str) -> str:
    """Delete a folder."""
    return f"wiped {path}"


def _two_pauses() -> ark.ScriptedModel:
    return ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="w1", name="wipe", arguments_json='{"path": "/a"}')]),
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="w2", name="wipe", arguments_json='{"path": "/b"}')]),
        "Both wiped.",
    ])


async def _approve_all(runtime) -> None:
    result = await runtime.run("wipe /a then /b")
    while result.stop_reason == "awaiting_approval":
        [item] = runtime.state.pending_approval.items
        assert (await runtime.controller.approve(item.approval_id)).ok
        result = await runtime.current_run.wait()
    assert result.stop_reason == "completed"


async def test_a_run_and_its_continuations_after_approvals_are_one_trace():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runtime = ark.AgentRuntime(_two_pauses(), tools=[wipe])
    ev.otel.instrument(runtime, tracer_provider=provider)
    await _approve_all(runtime)
    provider.shutdown()
    finished = exporter.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1, "the continuations started new traces"
    runs = sorted((s for s in finished if s.name == "invoke_agent"), key=lambda s: s.start_time)
    assert len(runs) == 3
    first, second, third = runs
    assert first.parent is None
    assert second.parent.span_id == first.context.span_id and third.parent.span_id == second.context.span_id
    assert second.links[0].context.span_id == first.context.span_id
    tools = sorted((s for s in finished if s.name == "execute_tool wipe"), key=lambda s: s.start_time)
    assert [t.parent.span_id for t in tools] == [second.context.span_id, third.context.span_id]


async def test_a_failed_model_span_carries_the_providers_error_message():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ark.ScriptedModel([ark.ScriptedTurn(
        error=ark.ArkError("provider", "provider_rate_limited", "Rate limit reached for gpt-x: slow down",
                           "conditional", status_code=429))])
    runtime = ark.AgentRuntime(model)
    ev.otel.instrument(runtime, tracer_provider=provider)
    assert (await runtime.run("go")).stop_reason == "failed"
    provider.shutdown()
    [chat] = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert chat.status.status_code is StatusCode.ERROR
    assert "Rate limit reached for gpt-x: slow down" in chat.status.description
    assert "the run ended before" not in chat.status.description
    assert chat.attributes[ERROR_TYPE] == "provider_rate_limited"
    [exception] = [e for e in chat.events if e.name == "exception"]
    assert exception.attributes["exception.message"] == "Rate limit reached for gpt-x: slow down"


async def test_an_otlp_receiver_gets_the_paused_run_and_its_continuations_in_one_trace():
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    received: list = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    provider = TracerProvider()
    try:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
            endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces", timeout=10)))
        runtime = ark.AgentRuntime(_two_pauses(), tools=[wipe])
        ev.otel.instrument(runtime, tracer_provider=provider)
        await _approve_all(runtime)
        assert provider.force_flush(30_000)
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()
        thread.join(10)
    got = [span for _, _, request in received for rs in request.resource_spans for ss in rs.scope_spans
           for span in ss.spans]
    assert len([s for s in got if s.name == "invoke_agent"]) == 3
    assert len({s.trace_id for s in got}) == 1
    roots = [s for s in got if not s.parent_span_id]
    assert [s.name for s in roots] == ["invoke_agent"]


async def test_a_continuation_restored_in_another_process_joins_the_runs_trace(tmp_path):
    # Two instrumentations, two providers, two runtimes on one saved session: what two
    # kernels (the one that paused, the one that restored and approved) export.
    storage = ark.FileStateStorage(tmp_path / "states")
    first_export, second_export = InMemorySpanExporter(), InMemorySpanExporter()
    first_provider, second_provider = TracerProvider(), TracerProvider()
    first_provider.add_span_processor(SimpleSpanProcessor(first_export))
    second_provider.add_span_processor(SimpleSpanProcessor(second_export))
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(
        id="w1", name="wipe", arguments_json='{"path": "/a"}')])])
    first = ark.AgentRuntime(model, tools=[wipe], storage=storage, session_id="s1")
    ev.otel.instrument(first, tracer_provider=first_provider)
    assert (await first.run("wipe /a")).stop_reason == "awaiting_approval"
    await first.aclose()

    second = await ark.AgentRuntime.restore("s1", storage=storage, model=ark.ScriptedModel(["wiped"]), tools=[wipe])
    ev.otel.instrument(second, tracer_provider=second_provider)
    [item] = second.state.pending_approval.items
    assert (await second.controller.approve(item.approval_id)).ok
    assert (await second.current_run.wait()).stop_reason == "completed"
    await second.aclose()
    first_provider.shutdown()
    second_provider.shutdown()
    [paused] = [s for s in first_export.get_finished_spans() if s.name == "invoke_agent"]
    [continued] = [s for s in second_export.get_finished_spans() if s.name == "invoke_agent"]
    assert paused.parent is None
    assert continued.context.trace_id == paused.context.trace_id
    assert continued.parent.span_id == paused.context.span_id
    assert {s.context.trace_id for s in second_export.get_finished_spans()} == {paused.context.trace_id}
    # and two different runs are two traces
    other = ark.AgentRuntime(ark.ScriptedModel(["hi"]))
    third_export, third_provider = InMemorySpanExporter(), TracerProvider()
    third_provider.add_span_processor(SimpleSpanProcessor(third_export))
    ev.otel.instrument(other, tracer_provider=third_provider)
    await other.run("hello")
    third_provider.shutdown()
    assert {s.context.trace_id for s in third_export.get_finished_spans()}.isdisjoint({paused.context.trace_id})
