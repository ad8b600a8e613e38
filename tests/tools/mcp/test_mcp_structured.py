"""An MCP tool's structuredContent beside its text where people and exports see it (issue 22b):
the ``tool.after`` event (redacted like every payload), the timeline's events (its detail JSON)
and its JSONL export."""

from __future__ import annotations

import json
from pathlib import Path

import arknb as ark
from arknb.events import EventTypes

SECRET = "Reykjavik-s3cr3t-9f2a"


def call(name: str, arguments: dict, call_id: str) -> ark.ToolCall:
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


async def test_structured_content_is_in_tool_after_the_timeline_and_its_export_redacted(kit, tmp_path: Path):
    model = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[call("weather", {"city": "Oslo"}, "w1"),
                                     call("weather", {"city": SECRET}, "w2")]),
        "Done."])
    runtime = ark.AgentRuntime(model, tools=[kit()], secrets=[SECRET])
    timeline = ark.TimelineWidget(runtime)
    events: list = []
    runtime.bus.subscribe(EventTypes.TOOL_AFTER, events.append)
    assert (await runtime.run("weather?")).stop_reason == "completed"

    by_call = {e.payload["call"]["id"]: e.payload["result"] for e in events}
    assert by_call["w1"]["structured_content"] == {"city": "Oslo", "celsius": 21.5}
    assert by_call["w2"]["structured_content"]["celsius"] == 21.5
    assert SECRET not in json.dumps(dict(by_call["w2"]["structured_content"]))
    assert "[redacted]" in by_call["w2"]["structured_content"]["city"]

    shown = [e["payload"]["result"] for e in timeline.events if e["type"] == EventTypes.TOOL_AFTER]
    assert {"city": "Oslo", "celsius": 21.5} in [r.get("structured_content") for r in shown]
    export = tmp_path / "timeline.jsonl"
    timeline.to_jsonl(export)
    text = export.read_text()
    assert '"structured_content"' in text and SECRET not in text
    await runtime.aclose()
