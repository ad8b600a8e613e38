"""Pending items as AG-UI interrupts, resume through the controller, and refused inputs."""

from __future__ import annotations

import json

import httpx

import arknb as ark
from arknb import AgentMessage, AgentState, ToolCall

from ._kit import Counted, approve, interrupts, post, run_input, types, user


def dangerous_turn(call_id: str = "c1", path: str = "/tmp/cache") -> ark.ScriptedTurn:
    return ark.ScriptedTurn(text="Clearing.", tool_calls=[
        ToolCall(id=call_id, name="clear_cache", arguments_json=json.dumps({"path": path}))])


async def paused_thread(serve, client, tmp_path, turns=None):
    counted = Counted(tmp_path)
    model = ark.ScriptedModel(turns or [dangerous_turn(), "Cleared."])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=counted.all, session_id=thread))
    events = await post(client, server.url, run_input("t1", "r1", user("clean up")))
    return server, model, counted, events


async def test_an_approval_becomes_an_interrupt_with_a_message_arguments_and_a_response_schema(serve, client, tmp_path):
    server, model, counted, events = await paused_thread(serve, client, tmp_path)
    [interrupt] = interrupts(events)
    assert interrupt["reason"] == "approval" and interrupt["toolCallId"] == "c1"
    assert "clear_cache" in interrupt["message"] and "/tmp/cache" in interrupt["message"]
    assert interrupt["metadata"]["arknb"]["arguments"] == {"path": "/tmp/cache"}
    assert interrupt["metadata"]["arknb"]["kind"] == "tool"
    assert interrupt["responseSchema"]["properties"]["approved"] == {"type": "boolean"}
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert counted.runs() == []  # nothing ran before a person decided


async def test_a_resume_approves_through_the_controller_and_a_second_resume_runs_nothing(serve, client, tmp_path):
    server, model, counted, events = await paused_thread(serve, client, tmp_path)
    [interrupt] = interrupts(events)
    resumed = await post(client, server.url, run_input("t1", "r2", resume=[approve(interrupt["id"])]))
    assert resumed[-1]["type"] == "RUN_FINISHED" and resumed[-1]["outcome"]["type"] == "success"
    assert next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")["content"] == "cleared /tmp/cache"
    assert counted.runs() == ["clear_cache /tmp/cache"]
    calls = len(model.requests)

    again = await post(client, server.url, run_input("t1", "r3", resume=[approve(interrupt["id"])]))
    assert again[-1]["type"] == "RUN_ERROR" and again[-1]["code"] == "approval_already_resolved"
    assert "already decided approved" in again[-1]["message"]
    assert counted.runs() == ["clear_cache /tmp/cache"] and len(model.requests) == calls


async def test_a_cancelled_resume_denies_the_call(serve, client, tmp_path):
    server, model, counted, events = await paused_thread(serve, client, tmp_path)
    [interrupt] = interrupts(events)
    resumed = await post(client, server.url, run_input(
        "t1", "r2", resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]))
    assert resumed[-1]["outcome"]["type"] == "success"
    assert counted.runs() == []
    denial = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")["content"]
    assert "tool_denied" in denial and "cancelled by the client" in denial


async def test_a_deny_with_a_reason_reaches_the_model(serve, client, tmp_path):
    server, model, counted, events = await paused_thread(serve, client, tmp_path)
    [interrupt] = interrupts(events)
    await post(client, server.url, run_input("t1", "r2", resume=[approve(interrupt["id"], False, reason="not today")]))
    tool_message = model.requests[-1].messages[-1]
    assert tool_message.role == "tool" and "not today" in tool_message.text and counted.runs() == []


async def test_refused_inputs_name_the_problem_and_run_nothing(serve, client, tmp_path):
    server, model, counted, events = await paused_thread(serve, client, tmp_path)
    [interrupt] = interrupts(events)
    calls = len(model.requests)

    unknown = await post(client, server.url, run_input("t1", "r2", resume=[approve("approval_nope")]))
    assert unknown[-1]["type"] == "RUN_ERROR" and unknown[-1]["code"] == "interrupt_not_found"
    assert "approval_nope" in unknown[-1]["message"] and interrupt["id"] in unknown[-1]["message"]

    bad_payload = await post(client, server.url, run_input(
        "t1", "r3", resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": "yes"}}]))
    assert bad_payload[-1]["code"] == "agui_input_invalid" and "approved" in bad_payload[-1]["message"]

    blocked = await post(client, server.url, run_input("t1", "r4", user("something else", "u2")))
    assert blocked[-1]["type"] == "RUN_ERROR" and blocked[-1]["code"] == "pending_approval_blocks_input"
    assert interrupt["id"] in blocked[-1]["message"]

    both = await post(client, server.url, run_input("t1", "r5", user("more", "u3"), resume=[approve(interrupt["id"])]))
    assert both[-1]["code"] == "agui_input_invalid"

    # nothing ran, nothing was decided: the interrupt is still open, and the model was not asked
    assert counted.runs() == [] and len(model.requests) == calls
    assert [i.approval_id for i in server.app.threads["t1"].controller.list_pending_approvals()] == [interrupt["id"]]
    again = await post(client, server.url, run_input("t1", "r6"))  # a reconnect: the open interrupts again
    assert [i["id"] for i in interrupts(again)] == [interrupt["id"]] and types(again)[1] == "MESSAGES_SNAPSHOT"


async def test_a_resume_on_a_thread_with_nothing_pending_is_refused(serve, client):
    model = ark.ScriptedModel(["Hi."])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    await post(client, server.url, run_input("t1", "r1", user("hello")))
    events = await post(client, server.url, run_input("t1", "r2", resume=[approve("approval_x")]))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "nothing_to_resume"
    assert "nothing pending" in events[-1]["message"] and len(model.requests) == 1


async def test_a_malformed_run_agent_input_is_http_422_naming_the_fields(serve, client):
    server = await serve(lambda thread: ark.AgentRuntime(ark.ScriptedModel(["x"]), session_id=thread))
    response = await client.post(server.url, json={"threadId": "t1", "messages": "hello"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "agui_input_invalid" and "runId" in error["message"] and "messages" in error["message"]
    response = await client.post(server.url, content=b"{not json")
    assert response.status_code == 422


async def test_a_plan_review_is_an_interrupt_and_its_resume_approves_the_plan(serve, client):
    plan = ToolCall(id="t1", name="write_todos", arguments_json=json.dumps(
        {"todos": [{"content": "Read the logs", "status": "pending"}, {"content": "Restart", "status": "pending"}]}))
    model = ark.ScriptedModel([ark.ScriptedTurn(text="My plan.", tool_calls=[plan]), "Planned and done."])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread, plan_mode=ark.PlanMode.REVIEW))
    events = await post(client, server.url, run_input("th", "r1", user("fix it")))
    [interrupt] = interrupts(events)
    assert interrupt["reason"] == "plan_review" and "Read the logs" in interrupt["message"]
    assert interrupt["responseSchema"]["required"] == ["approved"]
    resumed = await post(client, server.url, run_input("th", "r2", resume=[approve(interrupt["id"])]))
    assert resumed[-1]["outcome"]["type"] == "success"
    assert server.app.threads["th"].state.plan is not None


async def test_an_in_doubt_call_is_an_interrupt_resumed_with_a_resolution(serve, client, tmp_path):
    counted = Counted(tmp_path)
    storage = ark.MemoryStateStorage()
    await storage.save(AgentState(session_id="th", is_running=True, current_run_id="run_old", history=(
        AgentMessage.user("clean up"),
        AgentMessage.assistant("On it.", tool_calls=[ToolCall(id="c1", name="clear_cache",
                                                              arguments_json='{"path": "/tmp/x"}')]))))
    model = ark.ScriptedModel(["Noted."])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=counted.all, storage=storage,
                                                         session_id=thread))
    events = await post(client, server.url, run_input("th", "r1"))  # open the thread: the crash left c1 in doubt
    [interrupt] = interrupts(events)
    assert interrupt["reason"] == "in_doubt" and "may or may not have run" in interrupt["message"]
    assert interrupt["responseSchema"]["properties"]["resolution"]["enum"] == ["rerun", "done", "failed"]
    resumed = await post(client, server.url, run_input("th", "r2", resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"resolution": "done", "text": "it ran"}}]))
    assert resumed[-1]["outcome"]["type"] == "success" and counted.runs() == []  # recorded, not run again
    assert model.requests[-1].messages[-1].text == "it ran"


def deferring_tool(kind: str, detail: dict):
    asked: set[str] = set()

    @ark.tool
    def ask(question: str, ctx: ark.ToolContext) -> str:
        """Ask a person (the first time; run again once approved, it answers)."""
        if ctx.call_id in asked:
            return "asked and approved"
        asked.add(ctx.call_id)
        return ctx.defer(question, kind=kind, detail=detail)

    return ask


async def test_items_of_other_kinds_become_interrupts_with_their_own_schema(serve, client):
    # "human" (a graph's human step) and "elicitation" (an MCP server's question) come from
    # other capabilities; any ApprovalKind's item is an interrupt, whatever its kind.
    asked = ToolCall(id="c1", name="ask", arguments_json='{"question": "Which colour?"}')
    for kind, detail, key in (("human", {"schema": {"type": "string"}, "ask": "Which colour?"}, "value"),
                              ("elicitation", {"requested_schema": {"type": "object"}, "message": "Colour?"},
                               "action"),
                              ("custom_kind", {}, "approved")):
        model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[asked]), "ok"])
        server = await serve(lambda thread, model=model, kind=kind, detail=detail: ark.AgentRuntime(
            model, tools=[deferring_tool(kind, detail)], session_id=thread))
        async with httpx.AsyncClient(timeout=30) as c:
            events = await post(c, server.url, run_input("t", "r1", user("go")))
        [interrupt] = interrupts(events)
        assert interrupt["metadata"]["arknb"]["kind"] == kind
        assert interrupt["responseSchema"]["required"] == [key], kind
        if kind == "human":
            assert interrupt["responseSchema"]["properties"]["value"] == {"type": "string"}
            assert interrupt["message"] == "Which colour?"


async def test_a_generic_kind_is_decided_as_an_approval(serve, client):
    asked = ToolCall(id="c1", name="ask", arguments_json='{"question": "Go on?"}')
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[asked]), "ok"])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=[deferring_tool("custom_kind", {})],
                                                         session_id=thread))
    [interrupt] = interrupts(await post(client, server.url, run_input("t", "r1", user("go"))))
    resumed = await post(client, server.url, run_input("t", "r2", resume=[approve(interrupt["id"])]))
    assert resumed[-1]["outcome"]["type"] == "success" and resumed[-1]["result"]["text"] == "ok"
    assert next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")["content"] == "asked and approved"


async def test_a_kind_whose_controller_method_is_missing_is_refused_by_name(serve, client):
    # A "human" item is answered through controller.answer_human (graphs, DESIGN §16): a
    # runtime without it says so, and nothing is decided.
    asked = ToolCall(id="c1", name="ask", arguments_json='{"question": "Colour?"}')
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[asked]), "ok"])
    server = await serve(lambda thread: ark.AgentRuntime(
        model, tools=[deferring_tool("human", {"schema": {"type": "string"}})], session_id=thread))
    [interrupt] = interrupts(await post(client, server.url, run_input("t", "r1", user("go"))))
    events = await post(client, server.url, run_input(
        "t", "r2", resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"value": "red"}}]))
    if hasattr(ark.AgentController, "answer_human"):
        assert events[-1]["type"] == "RUN_FINISHED"
    else:
        assert events[-1]["type"] == "RUN_ERROR" and "answer_human" in events[-1]["message"]
        assert server.app.threads["t"].controller.list_pending_approvals()[0].approval_id == interrupt["id"]


async def test_a_cancelled_resume_of_an_in_doubt_call_records_it_failed(serve, client, tmp_path):
    counted = Counted(tmp_path)
    storage = ark.MemoryStateStorage()
    await storage.save(AgentState(session_id="th", is_running=True, current_run_id="run_old", history=(
        AgentMessage.user("clean up"),
        AgentMessage.assistant("On it.", tool_calls=[ToolCall(id="c1", name="clear_cache",
                                                              arguments_json='{"path": "/tmp/x"}')]))))
    model = ark.ScriptedModel(["Understood."])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=counted.all, storage=storage,
                                                         session_id=thread))
    [interrupt] = interrupts(await post(client, server.url, run_input("th", "r1")))
    resumed = await post(client, server.url, run_input(
        "th", "r2", resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]))
    assert resumed[-1]["outcome"]["type"] == "success" and counted.runs() == []
    assert "cancelled by the client" in model.requests[-1].messages[-1].text


async def test_a_decision_that_cannot_be_saved_is_not_acknowledged_and_nothing_runs(serve, client, tmp_path):
    from tests.runtime._approval_kit import FaultyStorage

    broken = {"now": False}
    storage = FaultyStorage(fail_if=lambda state: broken["now"])
    counted = Counted(tmp_path)
    model = ark.ScriptedModel([dangerous_turn(), "Cleared."])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=counted.all, storage=storage,
                                                         session_id=thread))
    [interrupt] = interrupts(await post(client, server.url, run_input("t1", "r1", user("clean up"))))
    broken["now"] = True
    failed = await post(client, server.url, run_input("t1", "r2", resume=[approve(interrupt["id"])]))
    assert failed[-1]["type"] == "RUN_ERROR" and failed[-1]["code"] == "state_save_failed"
    assert counted.runs() == [] and len(model.requests) == 1  # not acknowledged, so nothing ran
    broken["now"] = False  # the disk recovers: the same resume now goes through, once
    resumed = await post(client, server.url, run_input("t1", "r3", resume=[approve(interrupt["id"])]))
    assert resumed[-1]["outcome"]["type"] == "success" and counted.runs() == ["clear_cache /tmp/cache"]


async def test_a_resume_of_one_of_two_interrupts_reports_the_one_still_open(serve, client, tmp_path):
    two = ark.ScriptedTurn(text="Clearing both.", tool_calls=[
        ToolCall(id="c1", name="clear_cache", arguments_json='{"path": "/a"}'),
        ToolCall(id="c2", name="clear_cache", arguments_json='{"path": "/b"}', index=1)])
    server, model, counted, events = await paused_thread(serve, client, tmp_path, turns=[two, "Done."])
    first, second = interrupts(events)
    partial = await post(client, server.url, run_input("t1", "r2", resume=[approve(first["id"])]))
    assert [i["id"] for i in interrupts(partial)] == [second["id"]] and counted.runs() == []
    done = await post(client, server.url, run_input("t1", "r3", resume=[approve(second["id"], False)]))
    assert done[-1]["outcome"]["type"] == "success" and counted.runs() == ["clear_cache /a"]
