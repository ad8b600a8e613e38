"""The AG-UI stream of a run: lifecycle, incremental text/reasoning/tool calls, snapshots, cancel."""

from __future__ import annotations

import asyncio
import json

import pytest

import arknb as ark

from ._kit import check_lifecycle, post, run_input, types, user, validated


class GatedModel:
    """A scripted model that stops after its first text chunk until ``gate`` is set."""

    def __init__(self, turns):
        self.inner = ark.ScriptedModel(turns)
        self.gate = asyncio.Event()
        self.requests = self.inner.requests

    async def stream(self, request, *, cancel=None):
        seen_text = False
        async for event in self.inner.stream(request, cancel=cancel):
            if event.type == "text_delta":
                if seen_text:
                    await self.gate.wait()
                seen_text = True
            yield event

    async def generate(self, request):
        return await self.inner.generate(request)


def tools():
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return [add]


async def test_a_run_streams_reasoning_text_tool_calls_and_results_between_one_start_and_one_finish(serve, client):
    model = ark.ScriptedModel([
        ark.ScriptedTurn(reasoning=["Think", "ing"], text=["Let me ", "add."],
                         tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
        ark.ScriptedTurn(text=["It is ", "3."]),
    ])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=tools(), session_id=thread))
    events = await post(client, server.url, run_input("t1", "r1", user("What is 1 + 2?")))

    seen = types(events)
    assert seen[0] == "RUN_STARTED" and events[0]["threadId"] == "t1" and events[0]["runId"] == "r1"
    assert "MESSAGES_SNAPSHOT" not in seen  # a new thread has nothing to show yet
    # (fragments that reach the server's write together are joined; the gated test below
    # shows that text goes out while the model is still answering)
    reasoning = [e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT"]
    assert "".join(reasoning) == "Thinking"
    texts = {}
    for e in events:
        if e["type"] == "TEXT_MESSAGE_CONTENT":
            texts[e["messageId"]] = texts.get(e["messageId"], "") + e["delta"]
    assert list(texts.values()) == ["Let me add.", "It is 3."]
    assert seen.index("REASONING_END") < seen.index("TEXT_MESSAGE_START")
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "add" and start["toolCallId"] == "c1"
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"a": 1, "b": 2}
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == "c1" and result["content"] == "3"
    # the call is announced before it runs, its result before the second model turn's text
    assert seen.index("TOOL_CALL_END") < seen.index("TOOL_CALL_RESULT") < len(seen) - 1 - seen[::-1].index(
        "TEXT_MESSAGE_START")
    end = events[-1]
    assert end["type"] == "RUN_FINISHED" and end["outcome"] == {"type": "success"}
    assert end["result"] == {"stopReason": "completed", "text": "It is 3."}


async def test_text_reaches_the_client_while_the_model_is_still_answering(serve, client):
    model = GatedModel([ark.ScriptedTurn(text=["first ", "second"])])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    seen = []
    async with client.stream("POST", server.url, json=run_input("t1", "r1", user("hi"))) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            seen.append(event)
            if event["type"] == "TEXT_MESSAGE_CONTENT" and event["delta"] == "first ":
                # The model waits for this gate before its second chunk: had the server
                # buffered the stream, this line would never arrive and the test would time out.
                model.gate.set()
    check_lifecycle(seen)
    assert [e["delta"] for e in seen if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["first ", "second"]


class GatedCallModel:
    """A scripted model that streams each tool call's arguments in two pieces and waits for
    ``gate`` between them."""

    def __init__(self, turns):
        self.inner = ark.ScriptedModel(turns)
        self.gate = asyncio.Event()
        self.requests = self.inner.requests

    async def stream(self, request, *, cancel=None):
        async for event in self.inner.stream(request, cancel=cancel):
            if event.type != "tool_call_delta":
                yield event
                continue
            half = len(event.arguments_delta) // 2
            yield ark.ToolCallDelta(index=event.index, id=event.id, name=event.name,
                                    arguments_delta=event.arguments_delta[:half])
            await self.gate.wait()
            yield ark.ToolCallDelta(index=event.index, arguments_delta=event.arguments_delta[half:])

    async def generate(self, request):
        return await self.inner.generate(request)


async def test_tool_call_arguments_reach_the_client_while_the_model_is_still_streaming_them(serve, client):
    arguments = '{"a": 1, "b": 2}'
    model = GatedCallModel([
        ark.ScriptedTurn(text=["Let me add."], tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json=arguments)]),
        "It is 3."])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=tools(), session_id=thread))
    seen = []
    async with client.stream("POST", server.url, json=run_input("t1", "r1", user("1 + 2?"))) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            seen.append(event)
            if event["type"] == "TOOL_CALL_ARGS" and not model.gate.is_set():
                # The model waits for this gate before the rest of the arguments: had the
                # call gone out only with the complete message, this would never arrive.
                assert event["delta"] == arguments[:len(arguments) // 2]
                assert "TOOL_CALL_END" not in types(seen)
                model.gate.set()
    check_lifecycle(seen)
    assert model.gate.is_set()
    kinds = types(seen)
    start = next(e for e in seen if e["type"] == "TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == ("c1", "add")
    assert start["parentMessageId"] == next(e for e in seen if e["type"] == "TEXT_MESSAGE_START")["messageId"]
    assert kinds.index("TEXT_MESSAGE_END") < kinds.index("TOOL_CALL_START")
    assert "".join(e["delta"] for e in seen if e["type"] == "TOOL_CALL_ARGS") == arguments
    assert [e["toolCallId"] for e in seen if e["type"].startswith("TOOL_CALL_")] == ["c1"] * len(
        [k for k in kinds if k.startswith("TOOL_CALL_")])
    assert kinds.count("TOOL_CALL_START") == kinds.count("TOOL_CALL_END") == 1
    assert kinds.index("TOOL_CALL_END") < kinds.index("TOOL_CALL_RESULT")


async def test_fragments_that_reach_one_write_together_are_joined_and_nothing_is_lost(serve, client):
    chunks = [f"c{i} " for i in range(50)]
    model = ark.ScriptedModel([ark.ScriptedTurn(text=chunks)])  # no delay: the chunks come in a burst
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    events = await post(client, server.url, run_input("t1", "r1", user("hi")))
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert "".join(deltas) == "".join(chunks) and 1 <= len(deltas) <= len(chunks)


async def test_a_known_thread_gets_a_messages_snapshot_of_its_history(serve, client):
    model = ark.ScriptedModel(["Hello!", "Again."])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    await post(client, server.url, run_input("t1", "r1", user("hi")))
    events = await post(client, server.url, run_input(
        "t1", "r2", user("hi"), {"id": "r1:1", "role": "assistant", "content": "Hello!"}, user("more", "u2")))
    assert types(events)[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    snapshot = events[1]["messages"]
    assert [(m["role"], m.get("content")) for m in snapshot] == [("user", "hi"), ("assistant", "Hello!")]
    # only the trailing new message went in: the history holds each message once
    assert [m.text for m in server.app.threads["t1"].history] == ["hi", "Hello!", "more", "Again."]


async def test_a_client_that_disconnects_cancels_the_run(serve, client):
    model = GatedModel([ark.ScriptedTurn(text=["first ", "never"])])
    made = {}

    def factory(thread):
        made[thread] = ark.AgentRuntime(model, session_id=thread)
        return made[thread]

    server = await serve(factory)
    async with client.stream("POST", server.url, json=run_input("t1", "r1", user("hi"))) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and json.loads(line[6:])["type"] == "TEXT_MESSAGE_CONTENT":
                handle = made["t1"].current_run
                break  # leaving the block closes the connection mid-run
    result = await asyncio.wait_for(handle.wait(), 10)
    assert result.stop_reason == "cancelled"
    assert made["t1"].state.last_stop_reason == "cancelled"


async def test_every_event_of_a_run_is_an_official_ag_ui_event(serve, client):
    model = ark.ScriptedModel([ark.ScriptedTurn(reasoning="r", text="t",
                                                tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json="{}")]),
                               "done"])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=tools(), session_id=thread))
    events = await post(client, server.url, run_input("t1", "r1", user("hi")))
    parsed = [validated(e) for e in events]
    assert {type(p).__name__ for p in parsed} >= {
        "RunStartedEvent", "ReasoningStartEvent", "ReasoningMessageContentEvent", "TextMessageContentEvent",
        "ToolCallStartEvent", "ToolCallResultEvent", "StepStartedEvent", "RunFinishedEvent"}
    # the bad arguments reach the model as an error result, and the run still finishes
    assert "invalid arguments" in next(e for e in events if e["type"] == "TOOL_CALL_RESULT")["content"]


async def test_a_run_that_fails_ends_with_one_run_error_carrying_the_ark_error_code(serve, client):
    model = ark.ScriptedModel([ark.ScriptedTurn(text="partial ", error=ark.ArkError(
        "provider", "provider_server_error", "the model server broke"))])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread, max_model_retries=0))
    events = await post(client, server.url, run_input("t1", "r1", user("hi")))
    end = events[-1]
    assert end["type"] == "RUN_ERROR" and end["code"] == "provider_server_error"
    assert "the model server broke" in end["message"]
    # the text that streamed before the failure was closed properly before the error
    assert types(events).index("TEXT_MESSAGE_END") < len(events) - 1


async def test_a_second_input_while_a_run_is_in_flight_is_refused(serve, client):
    model = GatedModel([ark.ScriptedTurn(text=["first ", "second"]), "later"])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    async with client.stream("POST", server.url, json=run_input("t1", "r1", user("hi"))) as response:
        lines = response.aiter_lines()
        async for line in lines:
            if line.startswith("data: ") and json.loads(line[6:])["type"] == "TEXT_MESSAGE_CONTENT":
                break
        other = await post(client, server.url, run_input("t1", "r2", user("again", "u2")))
        assert other[-1]["type"] == "RUN_ERROR" and other[-1]["code"] == "run_already_active"
        assert len(model.requests) == 1  # the refused input reached nothing
        model.gate.set()
        rest = [json.loads(line[6:]) async for line in lines if line.startswith("data: ")]
    assert rest[-1]["type"] == "RUN_FINISHED" and rest[-1]["result"]["text"] == "first second"


async def test_serve_listens_on_loopback_and_aclose_frees_the_port(client):
    import socket

    server = await ark.agui.serve(lambda thread: ark.AgentRuntime(ark.ScriptedModel(["hi"]), session_id=thread))
    assert server.host == "127.0.0.1" and server.url == f"http://127.0.0.1:{server.port}/"
    page = await client.get(server.url)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script>" in page.text and "src=" not in page.text  # the shipped page loads nothing from elsewhere
    await server.aclose()
    again = await ark.agui.serve(lambda thread: ark.AgentRuntime(ark.ScriptedModel(["hi"]), session_id=thread),
                                 port=server.port)  # re-running the cell gets the same port
    try:
        assert (await client.get(again.url)).status_code == 200
    finally:
        await again.aclose()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(ark.ArkError, match="cannot listen on 127.0.0.1"):
            await ark.agui.serve(lambda thread: None, port=busy.getsockname()[1])


async def test_a_factory_that_builds_another_session_is_refused(serve, client):
    server = await serve(lambda thread: ark.AgentRuntime(ark.ScriptedModel(["x"]), session_id="other"))
    events = await post(client, server.url, run_input("t1", "r1", user("hi")))
    assert events[-1]["code"] == "invalid_argument" and "session_id=thread_id" in events[-1]["message"]


async def test_a_factory_that_raises_still_ends_the_stream_with_one_run_error(serve, client):
    def factory(thread):
        raise RuntimeError("no database today")

    server = await serve(factory)
    events = await post(client, server.url, run_input("t1", "r1", user("hi")))
    assert events[-1]["code"] == "internal_error" and "no database today" in events[-1]["message"]


async def test_pages_of_other_origins_are_allowed_only_when_named(serve, client):
    factory = lambda thread: ark.AgentRuntime(ark.ScriptedModel(["hi"]), session_id=thread)  # noqa: E731
    preflight = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}
    closed = await serve(factory)
    answer = await client.options(closed.url, headers=preflight)
    assert "access-control-allow-origin" not in answer.headers
    opened = await serve(factory, cors_origins=["http://localhost:3000"])
    answer = await client.options(opened.url, headers=preflight)
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "http://localhost:3000"
    events = await post(client, opened.url, run_input("t1", "r1", user("hello")))
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_the_same_input_sent_again_does_not_run_twice(serve, client):
    model = ark.ScriptedModel(["Hello!", "never"])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    body = run_input("t1", "r1", user("hi", "u-42"))
    first = await post(client, server.url, body)
    again = await post(client, server.url, body)  # a retry after a lost connection
    assert first[-1]["result"]["text"] == "Hello!"
    assert again[-1]["type"] == "RUN_FINISHED" and "result" not in again[-1]  # nothing ran
    assert types(again)[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and len(model.requests) == 1
    assert [m.text for m in server.app.threads["t1"].history] == ["hi", "Hello!"]
