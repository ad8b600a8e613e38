"""No API key leaves the runtime, whatever its source (issue 10 items 5 and 9; DESIGN §9).

A real ``OpenAICompatibleClient`` against the loopback server, with the key given four
ways (static, the profile's environment variable, a sync callable, an async callable).
A tool echoes the key, hooks copy it into a rewritten result, an injected message, a
denial and a dangerous call's arguments, and the model streams it split across chunks.
Then every saved file (JSON store, SQLite store with its WAL), every event, the
exported timeline JSONL, the widgets' payloads, the run's result and the reprs are
grepped for the key: it must appear nowhere, and every redaction is announced by a
``secret.redacted`` event that itself holds no key.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from pydantic import SecretStr

import arknb as ark
import arknb.eval as ev
from arknb import EventTypes
from arknb.providers.openai_compat import OpenAICompatibleClient, RetryPolicy, deepseek
from arknb.scan_secrets import SecretScanner
from arknb.widgets import ChatWidget, TimelineWidget
from openai_sse_server import Reply, chunk, sse

# Not credential-shaped (no "sk-"): only learning the key can catch it.
KEY = "arknb-e2e-7Hq2-0123456789abcdefghij"
ENV = "DEEPSEEK_API_KEY"


def _key_source(kind: str, monkeypatch):
    if kind == "static":
        return KEY
    if kind == "env":
        monkeypatch.setenv(ENV, KEY)
        return None   # the client reads the profile's variable at request time
    if kind == "callable":
        return lambda: SecretStr(KEY)
    if kind == "async_callable":
        async def provider() -> str:
            return KEY
        return provider
    raise AssertionError(kind)


def _turns() -> list[Reply]:
    split = [KEY[:5], KEY[5:17], KEY[17:]]   # the key split across three chunks
    tool_calls = [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "echo_key", "arguments": "{}"}},
        {"index": 1, "id": "c2", "type": "function", "function": {"name": "blocked", "arguments": "{}"}},
    ]
    return [
        Reply([sse(chunk("Checking "), chunk("the key."), chunk(tool_calls=tool_calls), chunk(finish="tool_calls"))]),
        Reply([sse(chunk(reasoning="it is "), *[chunk(reasoning=p) for p in split],
                   chunk("Your key is "), *[chunk(p) for p in split], chunk(" - now deploying."),
                   chunk(tool_calls=[{"index": 0, "id": "c3", "type": "function", "function": {
                       "name": "deploy", "arguments": json.dumps({"token": "placeholder"})}}]),
                   chunk(finish="tool_calls"))]),
        Reply([sse(chunk("Deployed; "), chunk("done."), chunk(finish="stop"))]),
    ]


def _tools():
    @ark.tool
    def echo_key() -> str:
        """Return the configured key (a careless tool)."""
        return f"the key is {KEY}"

    @ark.tool
    def blocked() -> str:
        """Never runs: a hook denies it."""
        return "ran"

    @ark.tool(risk="dangerous")
    def deploy(token: str) -> str:
        """Deploy with a token."""
        return f"deployed with {token}"

    return [echo_key, blocked, deploy]


def _install_hooks(runtime) -> None:
    @runtime.hooks.before_tool_call
    def leak_in_calls(ctx):
        if ctx.call.name == "blocked":
            return ark.ToolCallHookResult.deny(ark.ToolResult.from_text(f"denied, key {KEY}", is_error=True),
                                               f"policy (key {KEY})")
        if ctx.call.name == "deploy":
            return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({"token": KEY}))
        return None

    @runtime.hooks.after_tool_call
    def copy_key(ctx):
        if ctx.call.name == "echo_key":
            return ark.ToolResultHookResult.proceed(
                ark.ToolResult.from_text(f"{ctx.result.text} (copied: {KEY})"),
                injected_messages=[ark.AgentMessage.user(f"remember {KEY}")])
        return None


def _store(kind: str, folder: pathlib.Path):
    return ark.FileStateStorage(folder) if kind == "file" else ark.SQLiteStore(folder / "arknb.db")


def _observe(runtime):
    """Every event of ``runtime``, and a chat and a timeline that flush every change at once,
    their messages to the front end captured: ``(events, sent, chat, timeline)``."""
    events: list[ark.AgentEvent] = []
    runtime.bus.subscribe(EventTypes.ANY, events.append)
    sent: list = []
    timeline = TimelineWidget(runtime, interval=0, call_later=lambda delay, callback: None)
    chat = ChatWidget(runtime, interval=0, call_later=lambda delay, callback: None)
    for widget in (timeline, chat):
        widget.send = lambda content, buffers=None: sent.append(content)
    return events, sent, chat, timeline


def _texts_of(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@pytest.mark.parametrize("store_kind", ["file", "sqlite"])
@pytest.mark.parametrize("source", ["static", "env", "callable", "async_callable"])
async def test_key_appears_nowhere(server, tmp_path, monkeypatch, source, store_kind):
    monkeypatch.delenv(ENV, raising=False)
    server.script(*_turns())
    folder = tmp_path / "store"
    folder.mkdir()
    client = OpenAICompatibleClient(deepseek().replace(base_url=server.base_url),
                                    api_key=_key_source(source, monkeypatch), model="deepseek-chat",
                                    retry=RetryPolicy(max_retries=0))
    async with client:
        runtime = ark.AgentRuntime(client, tools=_tools(), storage=_store(store_kind, folder), session_id="keyed")
        _install_hooks(runtime)
        events, sent, chat, timeline = _observe(runtime)

        first = await runtime.run("check my key")
        assert first.stop_reason == "awaiting_approval", first.error
        (pending,) = runtime.controller.list_pending_approvals()
        assert KEY not in _texts_of(pending.model_dump(mode="json"))
        chat_pending = _texts_of([chat.transcript, chat.approvals])

        decided = await runtime.controller.approve(pending.approval_id)
        assert decided.ok
        final = await runtime.current_run
        assert final.stop_reason == "completed", final.error
        assert final.text == "Deployed; done."

    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"   # the key was used

    # What the model streamed: split across chunks, yet no chunk (nor their join) holds it.
    chunks = [e.payload for e in events if e.type == EventTypes.LLM_CHUNK]
    for kind in ("text", "reasoning"):
        joined = "".join(p["text"] for p in chunks if p["kind"] == kind)
        assert KEY not in joined and "[redacted]" in joined
    assert "Your key is [redacted] - now deploying." in "".join(p["text"] for p in chunks if p["kind"] == "text")

    # Every redaction is announced, without the value.
    reports = [e.payload for e in events if e.type == EventTypes.SECRET_REDACTED]
    places = {r["where"] for r in reports}
    assert {"event llm.chunk", "event tool.after", "event tool.denied", "event llm.after"} <= places, places
    assert any(w.startswith("history[") for w in places)
    assert all(r["count"] >= 1 and r["kinds"] for r in reports)

    # Exports and widget payloads (live, replayed, and rebuilt from the saved state).
    export = tmp_path / "trace.jsonl"
    timeline.to_jsonl(export)
    ev.trace.to_jsonl(events, tmp_path / "eval-trace.jsonl")
    restored = ark.AgentRuntime(ark.ScriptedModel([]), storage=_store(store_kind, folder), session_id="keyed",
                                state=await _store(store_kind, folder).load("keyed"))
    texts = {
        "events": "\n".join(e.to_json() for e in events),
        "timeline": _texts_of([timeline.events, timeline.rows(), timeline.spans()]),
        "chat": _texts_of([chat.transcript, chat.approvals, chat.error]) + chat_pending,
        "widget messages": _texts_of(sent),
        "replay": _texts_of(ChatWidget.from_events(events).transcript),
        "restored chat": _texts_of(ChatWidget(restored).transcript),
        "state": runtime.state.to_json() + repr(runtime.state) + restored.state.to_json(),
        "results": repr(first) + repr(final) + str(first.error) + repr(runtime.last_result),
        "reprs": repr(runtime) + repr(client) + repr(runtime.secret_lint) + repr(client._key),
    }
    for what, text in texts.items():
        assert KEY not in text, f"key found in {what}"
    assert "[redacted]" in texts["state"] and "[redacted]" in texts["restored chat"]
    assert len(sent) > 10 and "[redacted]" in texts["widget messages"]

    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert export in files and tmp_path / "eval-trace.jsonl" in files and len(files) >= 3
    for path in files:
        assert KEY.encode() not in path.read_bytes(), f"key found in {path.relative_to(tmp_path)}"
    scan = SecretScanner(env={}, secrets=[KEY]).scan([tmp_path])   # what a user runs before sharing
    assert scan.exit_code == 0 and len(scan.files) >= 3, [str(f) for f in scan.findings]


async def test_a_key_learnt_from_a_rotating_provider_is_redacted_too(server, make_client):
    """Each new value a callable returns is learnt before its request is sent."""
    keys = [f"{KEY}-{n}" for n in range(3)]
    issued: list[str] = []

    def provider() -> str:
        issued.append(keys[len(issued)])
        return issued[-1]

    @ark.tool
    def echo() -> str:
        """Echo every key issued so far."""
        return " / ".join(issued)

    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    server.script(Reply([sse(chunk("ok"), chunk(finish="stop"))]),
                  Reply([sse(chunk(tool_calls=[call]), chunk(finish="tool_calls"))]),
                  Reply([sse(chunk("ok"), chunk(finish="stop"))]))
    runtime = ark.AgentRuntime(make_client(api_key=provider), tools=[echo])
    assert (await runtime.run("one")).stop_reason == "completed"
    result = await runtime.run("two")
    assert result.stop_reason == "completed" and issued == keys
    tool_message = runtime.state.history[4]
    assert tool_message.text == "[redacted] / [redacted]"
    for key in keys:
        assert key not in runtime.state.to_json()


@pytest.mark.parametrize("store_kind", ["file", "sqlite"])
@pytest.mark.parametrize("source", ["callable", "async_callable"])
async def test_a_key_no_request_resolved_yet_is_known_before_an_approved_tool_echoes_it(
        server, make_client, tmp_path, monkeypatch, source, store_kind):
    """A session paused for approval, restored by a runtime whose client never sent a
    request: the approved call runs (and echoes the key) before the run's first model
    call, so the key is learnt as the run starts (``resolve_secrets``), and the provider
    is still asked once per request."""
    folder = tmp_path / "store"
    folder.mkdir()
    deploy = [t for t in _tools() if t.name == "deploy"]
    paused = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[
        ark.ToolCall(id="c1", name="deploy", arguments_json='{"token": "from the vault"}')])]),
        tools=deploy, storage=_store(store_kind, folder), session_id="keyed")
    assert (await paused.run("deploy")).stop_reason == "awaiting_approval"
    if store_kind == "sqlite":
        await paused.storage.aclose()

    asked: list[str] = []
    key_source = _key_source(source, monkeypatch)

    def counting():
        asked.append("key")
        return key_source()

    @ark.tool(risk="dangerous")
    def deploy(token: str) -> str:
        """Deploy, quoting the key (a careless tool)."""
        return f"deployed with {KEY}"

    server.script(Reply([sse(chunk("Deployed."), chunk(finish="stop"))]))
    runtime = ark.AgentRuntime(make_client(api_key=counting), tools=[deploy], storage=_store(store_kind, folder),
                               session_id="keyed")
    events, sent, chat, timeline = _observe(runtime)
    await runtime.load()
    (pending,) = runtime.controller.list_pending_approvals()

    assert (await runtime.controller.approve(pending.approval_id)).ok
    final = await runtime.current_run

    assert final.stop_reason == "completed", final.error
    assert asked == ["key"] and len(server.requests) == 1     # one request, one key lookup
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    after = [e.payload for e in events if e.type == EventTypes.TOOL_AFTER]
    assert after and after[0]["result"]["text"] == "deployed with [redacted]"
    timeline.to_jsonl(tmp_path / "trace.jsonl")
    texts = {"events": "\n".join(e.to_json() for e in events),
             "chat": _texts_of([chat.transcript, chat.approvals]), "widget messages": _texts_of(sent),
             "timeline": _texts_of([timeline.events, timeline.rows()]), "state": runtime.state.to_json()}
    for what, text in texts.items():
        assert KEY not in text, f"key found in {what}"
    if store_kind == "sqlite":
        await runtime.storage.aclose()
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert KEY.encode() not in path.read_bytes(), f"key found in {path.relative_to(tmp_path)}"


async def test_a_key_resolved_as_the_run_starts_is_fetched_again_when_its_request_comes_late():
    """A key fetched ahead of its request (``resolve_secrets``) is used by that request only
    within a minute; later the provider is asked again (a short-lived token may have expired)."""
    from arknb.providers.openai_compat import ApiKey
    from arknb.providers.openai_compat import secrets as key_module

    issued: list[str] = []

    def provider() -> str:
        issued.append(f"{KEY}-{len(issued)}")
        return issued[-1]

    fresh = ApiKey(provider)
    await fresh.prefetch()
    assert await fresh.get() == f"{KEY}-0" and len(issued) == 1     # reused: no second call
    await fresh.prefetch()                                            # a key was handed out: nothing to do
    assert len(issued) == 1

    stale = ApiKey(provider)
    await stale.prefetch()
    stale._prefetched = (stale._prefetched[0], stale._prefetched[1] - key_module._PREFETCH_TTL - 1)
    assert await stale.get() == f"{KEY}-2" and len(issued) == 3
