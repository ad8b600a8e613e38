"""ark.MCPServer over stdio against the SDK kit server (kit_server.py): a real server, no protocol mocks."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

import arknb as ark
from arknb.events import EventTypes

from .conftest import KIT


def call(name: str, arguments: dict | None = None, call_id: str = "c1") -> ark.ToolCall:
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments or {}))


def model_calling(*calls: ark.ToolCall, final: str = "Done.") -> ark.ScriptedModel:
    return ark.ScriptedModel([ark.ScriptedTurn(tool_calls=list(calls)), ark.ScriptedTurn(text=final)])


def tool_answers(runtime: ark.AgentRuntime) -> dict[str, ark.AgentMessage]:
    return {m.tool_call_id: m for m in runtime.state.history if m.role == "tool"}


def lines(path) -> list[str]:
    return path.read_text().splitlines()


async def test_tools_are_listed_on_first_use_with_their_schemas_verbatim(kit):
    server = kit()
    assert not server.connected and server.current_tools() == ()
    runtime = ark.AgentRuntime(model_calling(call("echo", {"text": "hi"})), tools=[server])
    result = await runtime.run("go")
    assert result.stop_reason == "completed"
    assert server.connected
    echo = runtime.tools.get("echo")
    assert echo.source == "MCP server 'kit'"
    assert echo.definition.parameters == {"properties": {"text": {"title": "Text", "type": "string"}},
                                          "required": ["text"], "type": "object", "title": "echoArguments"}
    assert echo.description == "Echo the text back."
    offered = [t.name for t in runtime.model.requests[0].tools]
    assert "echo" in offered and "delete_item" in offered
    assert tool_answers(runtime)["c1"].text == "hi"
    await runtime.aclose()
    assert not server.connected


async def test_include_exclude_and_prefix_shape_the_offered_names(kit):
    server = kit(include=["echo", "put_*", "weather"], exclude=["weather"], prefix="kit")
    await server.connect()
    assert [t.name for t in server.current_tools()] == ["kit_echo", "kit_put_item"]
    await server.aclose()


async def test_annotations_map_to_risk_read_only_idempotent_and_overrides_win(kit):
    server = kit(risk={"put_item": "dangerous"}, read_only={"unannotated": True}, idempotent={"delete_item": True})
    await server.connect()
    tools = {t.name: t for t in server.current_tools()}
    # readOnlyHint: read-only and safe
    assert tools["echo"].read_only and tools["echo"].risk == "safe" and not tools["echo"].idempotent
    # destructiveHint true: dangerous; the override makes it idempotent
    assert tools["delete_item"].risk == "dangerous" and tools["delete_item"].idempotent
    # destructiveHint false + idempotentHint: safe and idempotent, but the risk override wins
    assert tools["put_item"].risk == "dangerous" and tools["put_item"].idempotent
    # no annotations: the spec's default destructiveHint=true makes it dangerous...
    assert tools["slow_effect"].risk == "safe"  # (destructiveHint false)
    # ...unless an override says read-only
    assert tools["unannotated"].read_only and tools["unannotated"].risk == "safe"
    assert tools["delete_item"].source_detail["annotations"] == {"destructiveHint": True}
    await server.aclose()

    plain = kit()
    await plain.connect()
    assert {t.name: t.risk for t in plain.current_tools()}["unannotated"] == "dangerous"
    await plain.aclose()


async def test_an_override_naming_no_tool_of_the_server_is_a_clear_error(kit):
    server = kit(risk={"no_such_tool": "safe"})
    with pytest.raises(ark.ArkError) as caught:
        await server.connect()
    assert caught.value.code == "invalid_argument" and "no_such_tool" in caught.value.message
    await server.aclose()


async def test_a_destructive_tool_waits_for_approval_and_the_card_names_server_tool_and_annotations(kit, effects):
    server = kit()
    runtime = ark.AgentRuntime(model_calling(call("delete_item", {"name": "a"})), tools=[server])
    result = await runtime.run("go")
    assert result.stop_reason == "awaiting_approval"
    assert lines(effects) == []  # nothing ran before the approval
    [item] = runtime.controller.list_pending_approvals()
    assert "MCP server 'kit'" in item.reason and item.risk_level == "dangerous"
    assert item.detail["server"] == "kit" and item.detail["tool"] == "delete_item"
    assert item.detail["annotations"] == {"destructiveHint": True}
    await runtime.controller.approve(item.approval_id)
    final = await asyncio.wait_for(runtime.current_run.wait(), 30)
    assert final.stop_reason == "completed"
    assert lines(effects) == ["delete a"]
    await runtime.aclose()


async def test_hooks_see_mcp_calls_like_any_call_and_may_rewrite_or_deny(kit):
    server = kit()
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call("echo", {"text": "hi"}, "c1"),
                                                            call("put_item", {"name": "x"}, "c2")]), "Done."])
    runtime = ark.AgentRuntime(model, tools=[server])

    @runtime.hooks.before_tool_call
    def policy(ctx):
        if ctx.call.name == "echo":
            return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({"text": "rewritten"}))
        return ark.ToolCallHookResult.deny(ark.ToolResult.from_text("no puts", is_error=True), "policy")

    await runtime.run("go")
    answers = tool_answers(runtime)
    assert answers["c1"].text == "rewritten"
    assert answers["c2"].text == "no puts" and answers["c2"].is_error
    await runtime.aclose()


async def test_results_images_structured_content_and_errors(kit):
    server = kit()
    tools = {t.name: t for t in await server.tools()}
    ctx = ark.ToolContext(session_id="s", run_id="r", call_id="c")
    picture = await tools["picture"].invoke({}, ctx)
    assert [p.kind for p in picture.contents] == ["image", "text"]
    assert picture.contents[0].mime_type == "image/png" and picture.contents[1].text == "a red pixel"
    weather = await tools["weather"].invoke({"city": "Oslo"}, ctx)
    assert weather.structured_content == {"city": "Oslo", "celsius": 21.5} and "Oslo" in weather.text
    failed = await tools["fail"].invoke({"why": "on purpose"}, ctx)
    assert failed.is_error and "MCP server 'kit'" in failed.text and "'fail'" in failed.text
    assert "on purpose" in failed.text
    missing = await tools["echo"].invoke({}, ctx)  # the server validates: a protocol-level or isError answer
    assert missing.is_error and "'echo'" in missing.text
    await server.aclose()


async def test_the_idempotency_key_reaches_the_server_in_meta(kit):
    server = kit()
    runtime = ark.AgentRuntime(model_calling(call("meta_key", {}, "k1")), tools=[server], session_id="sess")
    result = await runtime.run("go")
    assert tool_answers(runtime)["k1"].text == f"sess:{result.run_id}:k1"
    await runtime.aclose()


async def test_progress_notifications_are_tool_progress_events(kit):
    server = kit()
    runtime = ark.AgentRuntime(model_calling(call("slow", {"seconds": 0.3})), tools=[server])
    seen: list = []
    runtime.bus.subscribe(EventTypes.TOOL_PROGRESS, seen.append)
    await runtime.run("go")
    assert [e.payload["progress"] for e in seen] == [1.0, 2.0, 3.0]
    assert seen[0].payload["total"] == 3.0 and seen[0].payload["name"] == "slow"
    assert seen[0].payload["call_id"] == "c1" and seen[0].payload["message"] == "step 1"
    await runtime.aclose()


async def test_cancelling_a_run_sends_the_server_a_cancellation_it_sees(kit, effects):
    server = kit()
    runtime = ark.AgentRuntime(model_calling(call("slow", {"seconds": 60})), tools=[server])
    started = asyncio.get_running_loop().create_future()
    runtime.bus.subscribe(EventTypes.TOOL_PROGRESS, lambda e: started.done() or started.set_result(e))
    handle = runtime.start("go")
    await asyncio.wait_for(started, 30)
    runtime.cancel()
    result = await asyncio.wait_for(handle.wait(), 30)
    assert result.stop_reason == "cancelled"
    for _ in range(100):  # the server writes its line in another process: poll its file, bounded
        if "cancelled slow" in lines(effects):
            break
        await asyncio.sleep(0.05)
    assert "cancelled slow" in lines(effects)
    assert server.connected  # the session survives a cancelled call
    await runtime.aclose()


async def test_a_call_that_hangs_past_the_timeout_is_an_error_result(kit):
    server = kit(timeout=0.5)
    runtime = ark.AgentRuntime(model_calling(call("hang")), tools=[server])
    await runtime.run("go")
    answer = tool_answers(runtime)["c1"]
    assert answer.is_error and "no answer within 0.5 s" in answer.text and "'hang'" in answer.text
    await runtime.aclose()


async def test_a_server_that_dies_mid_call_is_named_and_restarted_on_the_next_call(kit, effects):
    server = kit()
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call("crash", {}, "c1")]),
                               ark.ScriptedTurn(tool_calls=[call("echo", {"text": "back"}, "c2")]), "Done."])
    runtime = ark.AgentRuntime(model, tools=[server])
    await server.connect()
    first_pid = server.process_id
    await runtime.run("go")
    answers = tool_answers(runtime)
    assert answers["c1"].is_error and "exit code 3" in answers["c1"].text
    assert "crashing on purpose" in answers["c1"].text
    assert answers["c2"].text == "back" and not answers["c2"].is_error
    assert server.process_id not in (None, first_pid)
    await runtime.aclose()


async def test_tools_are_listed_again_after_list_changed(kit):
    server = kit()
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call("grow", {}, "c1")]),
                               ark.ScriptedTurn(tool_calls=[call("extra", {}, "c2")]), "Done."])
    runtime = ark.AgentRuntime(model, tools=[server])
    await runtime.run("go")
    assert "extra" not in [t.name for t in model.requests[0].tools]
    assert "extra" in [t.name for t in model.requests[1].tools]
    assert tool_answers(runtime)["c2"].text == "extra!"
    await runtime.aclose()


async def test_a_name_clash_with_a_runtime_tool_is_tool_name_conflict_naming_both(kit):
    @ark.tool
    def echo(text: str) -> str:
        """A local echo."""
        return text

    server = kit()
    await server.connect()
    with pytest.raises(ark.ArkError) as caught:
        ark.AgentRuntime(ark.ScriptedModel(["hi"]), tools=[echo, server])
    error = caught.value
    assert error.code == "tool_name_conflict" and error.layer == "config"
    assert "MCP server 'kit'" in error.message and "'echo'" in error.message and "prefix=" in error.message
    assert "Python function" in error.message
    # Before the server is connected, the clash surfaces when it is first listed.
    fresh = kit()
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), tools=[echo, fresh])
    result = await runtime.run("go")
    assert result.stop_reason == "failed" and result.error.code == "tool_name_conflict"
    # prefix= resolves it
    prefixed = kit(prefix="kit")
    runtime = ark.AgentRuntime(model_calling(call("kit_echo", {"text": "x"})), tools=[echo, prefixed])
    await runtime.run("go")
    assert tool_answers(runtime)["c1"].text == "x"
    await server.aclose()
    await fresh.aclose()
    await runtime.aclose()


async def test_a_server_that_cannot_start_names_command_exit_code_and_stderr():
    script = "import sys; sys.stderr.write('boom: missing config\\n'); sys.exit(7)"
    server = ark.MCPServer.stdio(sys.executable, ["-c", script], name="broken")
    with pytest.raises(ark.ArkError) as caught:
        await server.connect()
    error = caught.value
    assert error.code == "tool_source_failed"
    assert "exit code 7" in error.message and "boom: missing config" in error.message
    assert sys.executable in error.message and "'broken'" in error.message


async def test_a_server_that_never_answers_initialize_times_out_clearly():
    server = ark.MCPServer.stdio(sys.executable, ["-c", "import time; time.sleep(120)"], name="mute",
                                 connect_timeout=1.0)
    with pytest.raises(ark.ArkError) as caught:
        await server.connect()
    assert caught.value.code == "tool_source_failed"
    assert "did not answer initialize within 1 s" in caught.value.message
    assert server.process_id is None  # the silent process was ended


async def test_malformed_json_rpc_is_a_clear_error_not_a_hang():
    script = ("import sys\n"
              "for line in sys.stdin:\n"
              "    sys.stdout.write('{this is not json\\n'); sys.stdout.flush()\n")
    server = ark.MCPServer.stdio(sys.executable, ["-c", script], name="garbled", connect_timeout=2.0)
    with pytest.raises(ark.ArkError) as caught:
        await server.connect()
    assert caught.value.code == "tool_source_failed" and "'garbled'" in caught.value.message


async def test_a_50_mb_result_is_cut_to_max_result_chars_with_a_note(kit):
    server = kit(max_result_chars=10_000, timeout=600)
    tools = {t.name: t for t in await server.tools()}
    ctx = ark.ToolContext(session_id="s", run_id="r", call_id="c")
    result = await tools["big"].invoke({"chars": 50_000_000}, ctx)
    assert not result.is_error
    # What the run keeps (history, events, saves) is the cut result, not the 50 MB.
    assert len(result.text) < 10_300 and sum(len(p.text or "") for p in result.contents) < 10_300
    assert "max_result_chars=10000" in result.text and "49990000 of 50000000 characters" in result.text
    await server.aclose()


async def test_html_in_descriptions_and_results_is_kept_as_plain_text(kit):
    server = kit()
    runtime = ark.AgentRuntime(model_calling(call("html")), tools=[server])
    await runtime.run("go")
    assert runtime.tools.get("html").description == "Shows <script>alert('pwned')</script><b>bold</b>"
    answer = tool_answers(runtime)["c1"]
    assert [p.kind for p in answer.contents] == ["text"]
    assert answer.text == "<img src=x onerror=alert(1)><script>alert('result')</script>"
    await runtime.aclose()


def test_a_process_that_exits_without_closing_leaves_no_server_behind(tmp_path):
    """atexit-safe: a kernel that ends without aclose() does not leave its MCP server running."""
    import os
    import subprocess
    import time

    script = tmp_path / "child.py"
    script.write_text(
        "import asyncio, sys\n"
        "import arknb as ark\n"
        f"server = ark.MCPServer.stdio(sys.executable, [{KIT!r}], name='kit')\n"
        "async def main():\n"
        "    await server.connect()\n"
        "    print(server.process_id, flush=True)\n"
        "loop = asyncio.new_event_loop()\n"
        "loop.run_until_complete(main())\n")  # never closed: the interpreter exits with the server live
    env = dict(os.environ, PYTHONPATH=str(__import__("pathlib").Path(__file__).resolve().parents[3]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # another process ends: poll it, bounded
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        raise AssertionError(f"the MCP server {pid} outlived the process that started it")


async def test_loop_detection_and_a_deferring_hook_apply_to_mcp_calls(kit, effects):
    server = kit()
    same = [ark.ScriptedTurn(tool_calls=[call("echo", {"text": "again"}, f"c{i}")]) for i in range(4)]
    looping = ark.AgentRuntime(ark.ScriptedModel([*same, "never"]), tools=[server])
    result = await looping.run("go")
    assert result.stop_reason == "loop_detected"
    await looping.aclose()

    runtime = ark.AgentRuntime(model_calling(call("put_item", {"name": "p"})), tools=[kit()])

    @runtime.hooks.before_tool_call
    def ask_first(ctx):
        return ark.ToolCallHookResult.defer("puts need a look")

    result = await runtime.run("go")
    assert result.stop_reason == "awaiting_approval" and lines(effects) == []
    [item] = runtime.controller.list_pending_approvals()
    assert item.reason == "puts need a look"
    await runtime.controller.approve(item.approval_id)
    assert (await asyncio.wait_for(runtime.current_run.wait(), 30)).stop_reason == "completed"
    assert lines(effects) == ["put p"]
    await runtime.aclose()
