"""ark.MCPServer over Streamable HTTP on 127.0.0.1, and the secrets given in env= / headers=."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import arknb as ark
from arknb.eval.trace import to_jsonl
from arknb.events import EventTypes

TOKEN = "kit-token-7f3a9c2e5b1d"
HEADER = "Bearer hdr-secret-4e8b2a6c9d0f"


def call(name: str, arguments: dict, call_id: str = "c1") -> ark.ToolCall:
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def answers(runtime: ark.AgentRuntime) -> dict[str, ark.AgentMessage]:
    return {m.tool_call_id: m for m in runtime.state.history if m.role == "tool"}


def files_holding(root: Path, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


async def test_http_server_lists_calls_reports_progress_and_waits_for_approval(http_kit, effects):
    server = ark.MCPServer.http(http_kit, name="kit-http")
    model = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[call("echo", {"text": "over http"}, "c1"), call("slow", {"seconds": 0.2}, "c2")]),
        ark.ScriptedTurn(tool_calls=[call("delete_item", {"name": "h"}, "c3")]),
        "Done."])
    runtime = ark.AgentRuntime(model, tools=[server])
    progress: list = []
    runtime.bus.subscribe(EventTypes.TOOL_PROGRESS, progress.append)
    result = await runtime.run("go")
    assert result.stop_reason == "awaiting_approval"
    assert answers(runtime)["c1"].text == "over http" and answers(runtime)["c2"].text == "slept"
    assert [e.payload["progress"] for e in progress] == [1.0, 2.0]
    [item] = runtime.controller.list_pending_approvals()
    assert "MCP server 'kit-http'" in item.reason
    await runtime.controller.approve(item.approval_id)
    assert (await asyncio.wait_for(runtime.current_run.wait(), 30)).stop_reason == "completed"
    assert effects.read_text().splitlines() == ["delete h"]
    await runtime.aclose()
    assert not server.connected


async def test_http_cancel_reaches_the_server(http_kit, effects):
    server = ark.MCPServer.http(http_kit, name="kit-http")
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call("slow", {"seconds": 60})]), "Done."])
    runtime = ark.AgentRuntime(model, tools=[server])
    started = asyncio.get_running_loop().create_future()
    runtime.bus.subscribe(EventTypes.TOOL_PROGRESS, lambda e: started.done() or started.set_result(e))
    handle = runtime.start("go")
    await asyncio.wait_for(started, 30)
    runtime.cancel()
    assert (await asyncio.wait_for(handle.wait(), 30)).stop_reason == "cancelled"
    for _ in range(100):  # another process writes the line: poll its file, bounded
        if "cancelled slow" in effects.read_text():
            break
        await asyncio.sleep(0.05)
    assert "cancelled slow" in effects.read_text().splitlines()
    await runtime.aclose()


async def test_env_and_header_values_are_secrets_found_nowhere(kit, http_kit, tmp_path: Path):
    stdio = kit(env={"KIT_TOKEN": TOKEN})
    http = ark.MCPServer.http(http_kit, headers={"Authorization": HEADER}, name="kit-http", prefix="h")
    model = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[call("env_value", {"variable": "KIT_TOKEN"}, "c1"),
                                     call("h_header_value", {"name": "Authorization"}, "c2")]),
        "Done."])
    store_dir = tmp_path / "state"
    runtime = ark.AgentRuntime(model, tools=[stdio, http], storage=ark.FileStateStorage(store_dir),
                               session_id="secrets")
    events: list = []
    runtime.bus.subscribe("*", events.append)
    result = await runtime.run("show me the token")
    assert result.stop_reason == "completed"
    # The servers did receive them (the calls worked) ...
    texts = [m.text for m in runtime.state.history if m.role == "tool"]
    assert len(texts) == 2 and all("[redacted]" in t for t in texts), texts
    # ... and they are nowhere: state, events, a trace export, reprs.
    trace = tmp_path / "trace.jsonl"
    to_jsonl(events, trace)
    for needle in (TOKEN, HEADER.split()[1]):
        assert files_holding(store_dir, needle) == []
        assert needle not in trace.read_text()
        assert all(needle not in json.dumps(e.payload, default=str) for e in events)
        assert needle not in repr(stdio) and needle not in repr(http) and needle not in repr(runtime)
        assert needle not in repr(runtime.state)
    await runtime.aclose()


async def test_durable_store_holds_no_secret_and_records_the_server(kit, tmp_path: Path):
    server = kit(env={"KIT_TOKEN": TOKEN})
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call("env_value", {"variable": "KIT_TOKEN"})]), "Done."])
    store = ark.SQLiteStore(tmp_path / "arknb.db")
    runtime = ark.AgentRuntime(model, tools=[server], storage=store, session_id="durable-secrets")
    await runtime.run("go")
    operations = await store.list_operations("durable-secrets")
    [tool_op] = [op for op in operations if op.kind == "tool_call"]
    assert tool_op.status == "succeeded"
    assert tool_op.raw_input["source"] == "MCP server 'kit'"  # the server is on record
    await runtime.aclose()
    assert files_holding(tmp_path, TOKEN) == []
