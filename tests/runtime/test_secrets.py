"""Secrets are redacted where they would leave the runtime (issue 10 item 5; DESIGN §8, §9).

Configured secrets (``secrets=``, the model's keys) are replaced by ``[redacted]`` in
events, history, results and saved state; credential shapes (``sk-...``, bearer,
Authorization) in history and saved state. The save-time lint redacts what it finds,
in the saved copy and in memory, instead of refusing every later save. Each
redaction is announced by ``secret.redacted`` (where, count, kinds; never the value).
The end-to-end test over HTTP with every key source is
``tests/providers/test_secret_redaction_e2e.py``.
"""

from __future__ import annotations

import gc
import json
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

import arknb as ark
from arknb import AgentMessage, AgentState, EventTypes, ScriptedTurn
from arknb.runtime._redaction import ChunkGuard, Redactor
from arknb.state import REDACTED, SecretLint

from ._approval_kit import EventLog, call

API_KEY = "arknb-provider-key-0123456789abcdef"
CONFIGURED = "corp-internal-token-5f3a9c"
BEARER = "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345"


class KeyedModel(ark.ScriptedModel):
    """A provider-like scripted model that reports its key up front (``secret_values``)."""

    def __init__(self, turns, api_key: str) -> None:
        super().__init__(turns)
        self._api_key = api_key

    def secret_values(self):
        return [SecretStr(self._api_key)]

    def __repr__(self) -> str:
        return "KeyedModel(api_key=***)"


class ResolvingModel(ark.ScriptedModel):
    """Reports its key only when a call resolves it, like ``OpenAICompatibleClient`` with
    an env or callable key: through the observers, before its first event."""

    def __init__(self, turns, api_key: str) -> None:
        super().__init__(turns)
        self._api_key = api_key
        self._observers: list = []

    def observe_secrets(self, observer):
        self._observers.append(weakref.WeakMethod(observer))
        return lambda: None

    def stream(self, request, *, cancel=None):
        for ref in self._observers:
            if ref() is not None:
                ref()(SecretStr(self._api_key))
        return super().stream(request, cancel=cancel)


def leaking_tool(text: str):
    @ark.tool
    def lookup(query: str) -> str:
        """Look something up."""
        return text

    return lookup


def lookup_turns(final: str = "ok"):
    return [ScriptedTurn(tool_calls=[call("c1", "lookup", query="x")]), final]


def _no(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text


def _reports(log: EventLog) -> list[dict]:
    return [e.payload for e in log.of(EventTypes.SECRET_REDACTED)]


async def test_configured_secret_in_a_tool_result_is_redacted_and_the_session_saved(tmp_path):
    runtime = ark.AgentRuntime(ark.ScriptedModel(lookup_turns()), tools=[leaking_tool(f"the token is {CONFIGURED}")],
                               storage=ark.FileStateStorage(tmp_path), secrets=[CONFIGURED])
    log = EventLog(runtime)

    result = await runtime.run("look it up")

    assert result.stop_reason == "completed" and result.persisted and result.error is None
    assert all(p["ok"] for p in log.persisted())
    assert runtime.state.history[2].text == f"the token is {REDACTED}"
    after = log.of(EventTypes.TOOL_AFTER)[0].payload
    assert after["result"]["text"] == f"the token is {REDACTED}"
    reports = _reports(log)
    assert {"where": "event tool.after", "count": 1, "kinds": ["configured secret #1"]} in reports
    assert {"where": "history[2]", "count": 1, "kinds": ["configured secret #1"]} in reports
    _no(CONFIGURED, *(e.to_json() for e in log.events), *(p.read_text() for p in tmp_path.iterdir()),
        repr(runtime.state), repr(result))


async def test_the_report_follows_the_event_it_redacted():
    runtime = ark.AgentRuntime(ark.ScriptedModel(lookup_turns()), tools=[leaking_tool(CONFIGURED)],
                               secrets=[CONFIGURED])
    log = EventLog(runtime)
    await runtime.run("go")
    types = [e.type for e in log.events]
    after = types.index(EventTypes.TOOL_AFTER)
    assert types[after + 1] == EventTypes.SECRET_REDACTED
    assert log.events[after + 1].payload["where"] == "event tool.after"
    sequences = [e.sequence for e in log.events]
    assert sequences == sorted(set(sequences))


async def test_a_credential_shape_in_a_tool_result_is_redacted_from_history_and_saved_state(tmp_path):
    runtime = ark.AgentRuntime(ark.ScriptedModel(lookup_turns()), tools=[leaking_tool(f"request headers: {BEARER}")],
                               storage=ark.FileStateStorage(tmp_path))
    log = EventLog(runtime)

    result = await runtime.run("look it up")

    assert result.stop_reason == "completed" and result.persisted
    assert runtime.state.history[2].text == f"request headers: Authorization: Bearer {REDACTED}"
    assert {"where": "history[2]", "count": 1, "kinds": ["Authorization header"]} in _reports(log)
    _no("abcdefghijklmnopqrstuvwxyz012345", *(p.read_text() for p in tmp_path.iterdir()))
    # The model's next request already had it redacted.
    assert runtime.model.requests[1].messages[-1].text.endswith(REDACTED)


async def test_the_save_lint_redacts_a_leaked_state_in_the_file_and_in_memory(tmp_path):
    """A state saved by an older arknb with a credential in it: the first save redacts it
    (saved copy and memory) and says where; every later save succeeds."""
    sk_key = "sk-live_ABCDEFGHIJKLMNOPQRST"
    leaked = AgentState(session_id="old", history=(AgentMessage.user(f"my key is {sk_key}"),
                                                   AgentMessage.assistant("noted")),
                        metadata={"headers": {"X-Authorization": "Bearer abcdefghijklmnopqrstuvwx"}})
    storage = ark.FileStateStorage(tmp_path)
    runtime = ark.AgentRuntime(ark.ScriptedModel(["one", "two"]), storage=storage, state=leaked)
    log = EventLog(runtime)

    first = await runtime.run("hello")
    second = await runtime.run("again")

    assert first.persisted and second.persisted and all(p["ok"] for p in log.persisted())
    reports = _reports(log)
    assert {"where": "history[0]", "count": 1, "kinds": ["sk- API key pattern"]} in reports
    assert {"where": "metadata", "count": 1, "kinds": ["Authorization header"]} in reports
    assert len(reports) == 2   # reported once; later saves find nothing
    assert runtime.state.history[0].text == f"my key is {REDACTED}"
    assert runtime.state.metadata == {"headers": {"X-Authorization": REDACTED}}
    saved = (await storage.load("old"))
    assert saved.history[0].text == f"my key is {REDACTED}" and saved.metadata == runtime.state.metadata
    _no(sk_key, *(p.read_text() for p in tmp_path.iterdir()))
    _no("abcdefghijklmnopqrstuvwx", *(p.read_text() for p in tmp_path.iterdir()))


async def test_model_secret_values_are_redacted():
    model = KeyedModel(lookup_turns(), API_KEY)
    runtime = ark.AgentRuntime(model, tools=[leaking_tool(f"key={API_KEY}")])
    log = EventLog(runtime)
    result = await runtime.run("go")
    assert result.persisted and runtime.state.history[2].text == f"key={REDACTED}"
    _no(API_KEY, *(e.to_json() for e in log.events), runtime.state.to_json())


async def test_a_key_the_model_reports_when_it_resolves_it_is_redacted_from_its_own_stream():
    """The seam: observe_secrets. The key becomes known when the call starts, so even the
    first call's streamed text and every later result are redacted."""
    model = ResolvingModel([ScriptedTurn(text=["Your key: ", API_KEY[:9], API_KEY[9:], "."],
                                         tool_calls=[call("c1", "lookup", query="x")]), "ok"], API_KEY)
    runtime = ark.AgentRuntime(model, tools=[leaking_tool(API_KEY)])
    log = EventLog(runtime)
    result = await runtime.run("go")
    assert result.persisted
    streamed = "".join(e.payload["text"] for e in log.of(EventTypes.LLM_CHUNK) if e.payload["kind"] == "text")
    assert streamed == f"Your key: {REDACTED}.ok"
    calls = [e.payload["text"] for e in log.of(EventTypes.LLM_CHUNK) if e.payload["kind"] == "tool_call"]
    # The call's arguments stream apart from the text; with a key known they come whole when
    # the message completes (an escaped or split key shows only there), the first chunk names the call.
    assert calls[0] == "" and [text for text in calls if text] == ['{"query": "x"}']
    assert runtime.state.history[1].text == f"Your key: {REDACTED}."
    _no(API_KEY, *(e.to_json() for e in log.events), runtime.state.to_json())


async def test_a_model_without_the_seam_keeps_working():
    class Plain:   # only the LLMClient protocol: no secret_values, no observe_secrets
        def __init__(self):
            self.inner = ark.ScriptedModel(["hi"])

        def stream(self, request, *, cancel=None):
            return self.inner.stream(request, cancel=cancel)

        async def generate(self, request, *, cancel=None):
            return await self.inner.generate(request, cancel=cancel)

    result = await ark.AgentRuntime(Plain(), secrets=[CONFIGURED]).run("hello")
    assert result.text == "hi"


async def test_the_model_holds_the_runtimes_observer_weakly():
    model = ResolvingModel(["hi"], API_KEY)
    runtime = ark.AgentRuntime(model)
    (ref,) = model._observers
    assert ref() is not None
    del runtime
    gc.collect()
    assert ref() is None


async def test_secret_in_a_pending_approval_is_redacted_not_refused(tmp_path):
    @ark.tool(risk="dangerous")
    def deploy(target: str) -> str:
        """Deploy."""
        return f"deployed {target}"

    storage = ark.FileStateStorage(tmp_path)
    model = ark.ScriptedModel([ScriptedTurn(text=f"using {CONFIGURED}",
                                            tool_calls=[call("c1", "deploy", target=CONFIGURED)]), "done"])
    runtime = ark.AgentRuntime(model, tools=[deploy], storage=storage, secrets=[CONFIGURED])
    log = EventLog(runtime)

    paused = await runtime.run("deploy")

    assert paused.stop_reason == "awaiting_approval" and paused.persisted
    (item,) = runtime.controller.list_pending_approvals()
    assert item.tool_call.arguments == {"target": REDACTED}
    _no(CONFIGURED, *(p.read_text() for p in tmp_path.iterdir()), *(e.to_json() for e in log.events))
    assert any(r["where"] == "pending_approval" for r in _reports(log))
    # The saved batch is what runs after approval (also after a restart): the redacted call.
    assert (await runtime.controller.approve(item.approval_id)).ok
    final = await runtime.current_run
    assert final.stop_reason == "completed"
    assert runtime.state.history[2].text == f"deployed {REDACTED}"


async def test_hook_outputs_are_redacted():
    """Rewrites, synthetic results, injected and continuation messages, input rewrites."""
    @ark.tool
    def blocked() -> str:
        """Never runs."""
        return "ran"

    model = ark.ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "lookup", query="x"), call("c2", "blocked", 1)]),
                               "first answer", "second answer"])
    runtime = ark.AgentRuntime(model, tools=[leaking_tool("clean"), blocked], secrets=[CONFIGURED])
    log = EventLog(runtime)

    @runtime.hooks.before_run
    def stamp(ctx):
        return ark.BeforeRunHookResult.proceed(input=[AgentMessage.user(f"{ctx.input[0].text} {CONFIGURED}")])

    @runtime.hooks.before_tool_call
    def deny_blocked(ctx):
        if ctx.call.name == "blocked":
            return ark.ToolCallHookResult.deny(ark.ToolResult.from_text(f"no ({CONFIGURED})", is_error=True),
                                               f"policy {CONFIGURED}")
        return None

    @runtime.hooks.after_tool_call
    def copy(ctx):
        return ark.ToolResultHookResult.proceed(ark.ToolResult.from_text(f"{ctx.result.text} {CONFIGURED}"),
                                                injected_messages=[AgentMessage.user(f"note {CONFIGURED}")])

    continued = []

    @runtime.hooks.on_turn_completion
    def once_more(ctx):
        if ctx.message.tool_calls or continued:
            return None
        continued.append(1)
        return ark.TurnCompletionHookResult.continue_run([AgentMessage.user(f"more {CONFIGURED}")])

    result = await runtime.run("hello")

    assert result.stop_reason == "completed", result.error
    texts = [m.text for m in runtime.state.history]
    assert texts[0] == f"hello {REDACTED}"
    assert f"clean {REDACTED}" in texts and f"no ({REDACTED}) {REDACTED}" in texts
    assert f"note {REDACTED}" in texts and f"more {REDACTED}" in texts
    denied = log.of(EventTypes.TOOL_DENIED)[0].payload
    assert denied["reason"] == f"policy {REDACTED}"
    assert any(e.payload["hook"] == "copy" for e in log.of(EventTypes.HOOK_DECISION))
    _no(CONFIGURED, *(e.to_json() for e in log.events), runtime.state.to_json(),
        *(m.model_dump_json() for r in model.requests for m in r.messages))


async def test_an_abort_reason_holding_a_secret_is_redacted_in_the_result_state_and_events(tmp_path):
    runtime = ark.AgentRuntime(ark.ScriptedModel(["never"]), storage=ark.FileStateStorage(tmp_path),
                               secrets=[CONFIGURED])
    log = EventLog(runtime)

    @runtime.hooks.before_model_call
    def stop(ctx):
        return ark.ModelCallHookResult.abort(f"refusing: token {CONFIGURED} expired")

    result = await runtime.run("go")

    assert result.stop_reason == "aborted" and result.error.code == "hook_abort"
    assert REDACTED in result.error.message and result.error.__traceback__ is None
    assert REDACTED in runtime.state.last_error.message
    assert runtime.last_result is result
    _no(CONFIGURED, str(result.error), repr(result), runtime.state.to_json(),
        *(e.to_json() for e in log.events), *(p.read_text() for p in tmp_path.iterdir()))
    assert any(r["where"] == "run result error" for r in _reports(log))


async def test_a_secret_split_across_streamed_chunks_never_leaves_in_llm_chunk():
    pieces = ["The token ", "is ", CONFIGURED[:1], CONFIGURED[1:7], CONFIGURED[7:20], CONFIGURED[20:],
              " and ", CONFIGURED[:4], "-not-it", "."]
    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(text=pieces, reasoning=["I see ", CONFIGURED[:10],
                                                                                       CONFIGURED[10:]])]),
                               secrets=[CONFIGURED])
    log = EventLog(runtime)
    result = await runtime.run("go")

    chunks = [e.payload for e in log.of(EventTypes.LLM_CHUNK)]
    text = "".join(p["text"] for p in chunks if p["kind"] == "text")
    reasoning = "".join(p["text"] for p in chunks if p["kind"] == "reasoning")
    assert text == f"The token is {REDACTED} and {CONFIGURED[:4]}-not-it."
    assert reasoning == f"I see {REDACTED}"
    assert result.text == text and runtime.state.history[-1].reasoning_text == reasoning
    assert all(CONFIGURED not in p["text"] for p in chunks)
    assert {"where": "event llm.chunk", "count": 1, "kinds": ["configured secret"]} in _reports(log)


async def test_split_secret_is_redacted_with_a_chunk_hook_too():
    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(text=["a ", CONFIGURED[:5], CONFIGURED[5:], " b"])]),
                               secrets=[CONFIGURED])
    log = EventLog(runtime)

    @runtime.hooks.on_model_chunk
    def upper(ctx):
        return ark.ModelChunkHookResult.proceed(text=ctx.text.replace("a ", "A "))

    result = await runtime.run("go")
    text = "".join(e.payload["text"] for e in log.of(EventTypes.LLM_CHUNK))
    assert text == f"A {REDACTED} b" and result.text == text


@settings(max_examples=300, deadline=None)
@given(before=st.text(alphabet="abcdef -", max_size=30), after=st.text(alphabet="abcdef -", max_size=30),
       cuts=st.lists(st.integers(min_value=0, max_value=90), max_size=8), times=st.integers(0, 2))
def test_chunk_guard_never_publishes_a_secret_however_it_is_split(before, after, cuts, times):
    secret = "sec-ret-0123"
    whole = before + secret * times + after
    bounds = sorted({0, len(whole), *[c for c in cuts if c <= len(whole)]})
    reports = []
    lint = SecretLint([secret])
    guard = ChunkGuard(Redactor(lint, lambda _type, payload: reports.append(payload)))
    published = []
    for start, end in zip(bounds, bounds[1:]):
        published.append(guard.feed("text", whole[start:end]))
    published.append(guard.flush("text"))
    joined = "".join(published)
    assert joined == whole.replace(secret, REDACTED)
    for index in range(len(published)):
        assert secret not in "".join(published[: index + 1])   # never, at any moment
    assert sum(r["count"] for r in reports) == times


def test_chunk_guard_costs_nothing_without_secrets():
    guard = ChunkGuard(Redactor(SecretLint(), lambda *_: None))
    text = "sec"
    assert guard.feed("text", text) is text and guard.flush("text") == ""


def test_the_secret_redacted_payload_never_holds_the_value():
    reports = []
    redactor = Redactor(SecretLint([CONFIGURED]), lambda _type, payload: reports.append(payload))
    value = redactor.value({"a": [f"x {CONFIGURED} y {CONFIGURED}"], CONFIGURED: 1}, "somewhere")
    assert value == {"a": [f"x {REDACTED} y {REDACTED}"], REDACTED: 1}
    assert reports == [{"where": "somewhere", "count": 3, "kinds": ["configured secret #1"]}]
    assert CONFIGURED not in json.dumps(reports)


def test_redactor_returns_clean_values_unchanged():
    redactor = Redactor(SecretLint([CONFIGURED]), lambda *_: pytest.fail("nothing to report"))
    payload = {"text": "nothing here", "items": [1, 2.5, None, True], "message": AgentMessage.user("hi")}
    assert redactor.value(payload, "x") is payload


def test_chunk_guard_holds_a_long_secret_split_anywhere():
    secret = "L" + "0123456789abcdef" * 20   # longer than the prefix table's limit
    guard = ChunkGuard(Redactor(SecretLint([secret]), lambda *_: None))
    text = f"x {secret} y {secret[:100]}z"
    out = [guard.feed("text", text[i:i + 7]) for i in range(0, len(text), 7)] + [guard.flush("text")]
    assert "".join(out) == text.replace(secret, REDACTED)
    assert all(secret not in "".join(out[:i + 1]) for i in range(len(out)))


async def test_a_tool_error_holding_a_secret_is_redacted(tmp_path):
    @ark.tool
    def lookup(query: str) -> str:
        """Fails, quoting the credential it was given."""
        raise PermissionError(f"token {CONFIGURED} was refused")

    runtime = ark.AgentRuntime(ark.ScriptedModel(lookup_turns()), tools=[lookup],
                               storage=ark.FileStateStorage(tmp_path), secrets=[CONFIGURED])
    log = EventLog(runtime)
    result = await runtime.run("go")
    answer = runtime.state.history[2]
    assert result.persisted and answer.is_error and f"token {REDACTED} was refused" in answer.text
    _no(CONFIGURED, *(e.to_json() for e in log.events), *(p.read_text() for p in tmp_path.iterdir()))


async def test_a_tool_result_the_lint_could_only_see_in_json_does_not_stop_later_saves(tmp_path):
    """A control character after a credential name (binary tool output): JSON escapes it as
    ``\\u0000``, which must not look like a token the redaction missed. Issue 10: one such
    string in history made every save of the session fail once it was loaded again."""
    first = ark.AgentRuntime(ark.ScriptedModel(lookup_turns("one")),
                             tools=[leaking_tool("authorization:\x00abcdefghijklmnopqrstu")],
                             storage=ark.FileStateStorage(tmp_path), session_id="s")
    assert (await first.run("look it up")).persisted

    again = ark.AgentRuntime(ark.ScriptedModel(["two", "three"]), storage=ark.FileStateStorage(tmp_path),
                             session_id="s")
    log = EventLog(again)
    results = [await again.run("and again"), await again.run("once more")]

    assert all(r.persisted and r.error is None for r in results)
    assert log.persisted() and all(p["ok"] for p in log.persisted())
    assert (await ark.FileStateStorage(tmp_path).load("s")).history == again.state.history


SHAPED = "sk-proj-Q7xL2mN9pR4tV8wZ1bC5dF3gH6jK0"


@pytest.mark.parametrize("cuts", [(2, 9, 20), (3, 4, 30), (5, 6, 7), (8, 16, 24)])
async def test_a_credential_shape_streamed_in_pieces_never_leaves_in_llm_chunk(cuts):
    """No secret is configured: the shape alone is found, also cut across chunks."""
    a, b, c = cuts
    pieces = ["Use ", SHAPED[:a], SHAPED[a:b], SHAPED[b:c], SHAPED[c:], " or Bearer ", "eyJhbGciOiJI", "UzI1NiJ9.x.y",
              " now, a", " word."]
    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(text=pieces)]))
    log = EventLog(runtime)
    result = await runtime.run("go")
    chunks = [e.payload["text"] for e in log.of(EventTypes.LLM_CHUNK)]
    assert "".join(chunks) == f"Use {REDACTED} or Bearer {REDACTED} now, a word." == result.text
    assert all("Q7xL" not in c and "eyJh" not in c for c in chunks)
    assert chunks[-2].endswith(" now, a") and chunks[-1] == " word."  # a chunk ending in "a" is not held back
    kinds = {k for r in _reports(log) if r["where"] == "event llm.chunk" for k in r["kinds"]}
    assert kinds == {"sk- API key pattern", "bearer token pattern"}


class SplitCallModel(ark.ScriptedModel):
    """Streams each tool call's arguments in pieces cut at ``cuts`` (id and name on the first)."""

    def __init__(self, turns, cuts) -> None:
        super().__init__(turns)
        self._cuts = cuts

    async def stream(self, request, *, cancel=None):
        async for event in super().stream(request, cancel=cancel):
            if event.type != "tool_call_delta":
                yield event
                continue
            args, bounds = event.arguments_delta, [0, *self._cuts, len(event.arguments_delta)]
            for n, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
                yield ark.ToolCallDelta(index=event.index, id=event.id if n == 0 else None,
                                        name=event.name if n == 0 else None, arguments_delta=args[lo:hi])


async def test_with_secrets_configured_tool_call_arguments_come_whole_and_no_key_leaves_in_them():
    """A model can write a known key JSON-escaped or split across the arguments' strings,
    which no fragment shows: with secrets configured the arguments are held and published,
    redacted, when the message completes (without secrets they stream piece by piece:
    tests/agui/test_stream.py)."""
    arguments = json.dumps({"query": f"send {CONFIGURED} now"})
    at = arguments.index(CONFIGURED)
    turns = [ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="lookup", arguments_json=arguments)]),
             ScriptedTurn(text=["done"])]
    runtime = ark.AgentRuntime(SplitCallModel(turns, [5, at + 3, at + 11, at + 20]), tools=[leaking_tool("found")],
                               secrets=[CONFIGURED])
    log = EventLog(runtime)
    await runtime.run("go")

    calls = [e.payload for e in log.of(EventTypes.LLM_CHUNK) if e.payload["kind"] == "tool_call"]
    assert len([p for p in calls if p["text"]]) == 1  # the whole arguments, once
    assert {(p["index"], p["call_id"], p["name"]) for p in calls} == {(0, "c1", "lookup")}
    assert "".join(p["text"] for p in calls) == arguments.replace(CONFIGURED, REDACTED)
    assert all(CONFIGURED not in p["text"] for p in calls)
    # the chunks come before the message that holds the call is complete
    order = [e.type for e in log.events]
    assert order.index(EventTypes.LLM_CHUNK) < order.index(EventTypes.LLM_AFTER)
