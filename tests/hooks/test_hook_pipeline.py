"""HookPipeline laws (seed 000 §5, §9.2, §14 "Hook SPI 与 Pipeline"; seed 004 §6 failures)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from arknb import (
    AgentHook, AgentMessage, ArkError, BeforeRunHookContext, BeforeRunHookResult, HookPipeline, HookRegistry,
    HookSlot, ModelCallHookContext, ModelCallHookResult, ModelChunkHookContext, ModelChunkHookResult,
    ModelRequest, ModelResponse, ModelResponseHookContext, ModelResponseHookResult, StatePersistenceHookContext,
    StatePersistenceHookResult, ToolCall, ToolCallHookContext, ToolCallHookResult, ToolResult,
    ToolResultHookContext, ToolResultHookResult, TurnCompletionHookContext, TurnCompletionHookResult,
)
from arknb.hooks import AfterRunHookContext

BASE = {"session_id": "s1", "run_id": "r1", "state": None}
CALL = ToolCall(id="call_abc", name="search", arguments_json='{"q": "weather"}')
REQUEST = ModelRequest(messages=(AgentMessage.user("hi"),))
RESPONSE = ModelResponse(message=AgentMessage.assistant("hello"))
RESULT = ToolResult.from_text("sunny")


def make(hooks: list[tuple[str, HookSlot, Any]] | None = None, **options):
    registry = HookRegistry()
    events: list[tuple[str, dict]] = []
    for name, slot, fn in hooks or ():
        registry.register(slot, fn, name=name, **options.get(name, {}))
    pipeline = HookPipeline(registry, lambda t, p: events.append((t, p() if callable(p) else p)))
    return registry, pipeline, events


CONTEXTS = {
    HookSlot.BEFORE_RUN: lambda: BeforeRunHookContext(**BASE, input=(AgentMessage.user("hi"),)),
    HookSlot.BEFORE_MODEL_CALL: lambda: ModelCallHookContext(**BASE, request=REQUEST),
    HookSlot.ON_MODEL_CHUNK: lambda: ModelChunkHookContext(**BASE, text="abc"),
    HookSlot.AFTER_MODEL_CALL: lambda: ModelResponseHookContext(**BASE, response=RESPONSE),
    HookSlot.BEFORE_TOOL_CALL: lambda: ToolCallHookContext(**BASE, call=CALL),
    HookSlot.AFTER_TOOL_CALL: lambda: ToolResultHookContext(**BASE, call=CALL, result=RESULT),
    HookSlot.ON_TURN_COMPLETION: lambda: TurnCompletionHookContext(**BASE, message=RESPONSE.message, turn=1),
    HookSlot.BEFORE_PERSIST_STATE: lambda: StatePersistenceHookContext(**BASE, reason="after_model_text"),
}


def run_slot(pipeline: HookPipeline, slot: HookSlot, ctx=None):
    return getattr(pipeline, slot.value)(ctx if ctx is not None else CONTEXTS[slot]())


# --- SPI ---------------------------------------------------------------------------

async def test_agent_hook_subclass_defaults_pass_through_every_slot():
    class Empty(AgentHook):
        pass

    hook = Empty()
    assert (await hook.before_run(CONTEXTS[HookSlot.BEFORE_RUN]())).input == (AgentMessage.user("hi"),)
    assert (await hook.before_model_call(CONTEXTS[HookSlot.BEFORE_MODEL_CALL]())).request == REQUEST
    chunk = await hook.on_model_chunk(CONTEXTS[HookSlot.ON_MODEL_CHUNK]())
    assert (chunk.action, chunk.text) == ("proceed", "abc")
    assert (await hook.after_model_call(CONTEXTS[HookSlot.AFTER_MODEL_CALL]())).response == RESPONSE
    assert (await hook.before_tool_call(CONTEXTS[HookSlot.BEFORE_TOOL_CALL]())).call == CALL
    assert (await hook.after_tool_call(CONTEXTS[HookSlot.AFTER_TOOL_CALL]())).result == RESULT
    assert (await hook.on_turn_completion(CONTEXTS[HookSlot.ON_TURN_COMPLETION]())).action == "accept"
    assert (await hook.before_persist_state(CONTEXTS[HookSlot.BEFORE_PERSIST_STATE]())).action == "proceed"
    assert await hook.after_run(AfterRunHookContext(**BASE)) is None
    assert len(HookSlot) == 10


async def test_class_hook_takes_part_only_in_the_slots_it_overrides():
    class Guard(AgentHook):
        async def before_tool_call(self, ctx):
            return ToolCallHookResult.deny(ToolResult.from_text("no", is_error=True), "policy")

    registry = HookRegistry([Guard()])
    assert [e.name for e in registry] == ["Guard"]
    assert registry.for_slot(HookSlot.BEFORE_TOOL_CALL) and not registry.for_slot(HookSlot.BEFORE_RUN)
    result = await HookPipeline(registry).before_tool_call(CONTEXTS[HookSlot.BEFORE_TOOL_CALL]())
    assert (result.action, result.reason, result.hook) == ("deny", "policy", "Guard")


# --- law 1: serial, in registration order ------------------------------------------

async def test_hooks_run_serially_in_registration_order():
    log: list[str] = []

    def recorder(name):
        async def hook(ctx):
            log.append(f"{name} start")
            for _ in range(3):
                await asyncio.sleep(0)  # a fire-and-forget pipeline would interleave here
            log.append(f"{name} end")
        return hook

    _, pipeline, _ = make([(n, HookSlot.BEFORE_TOOL_CALL, recorder(n)) for n in ("c", "a", "b")])
    await pipeline.before_tool_call(CONTEXTS[HookSlot.BEFORE_TOOL_CALL]())
    assert log == ["c start", "c end", "a start", "a end", "b start", "b end"]


async def test_order_option_runs_lower_order_first_then_registration_order():
    log: list[str] = []
    registry = HookRegistry()
    for name, order in [("late", 10), ("first", -5), ("mid1", 0), ("mid2", 0)]:
        registry.register(HookSlot.BEFORE_RUN, lambda ctx, n=name: log.append(n), name=name, order=order)
    await HookPipeline(registry).before_run(CONTEXTS[HookSlot.BEFORE_RUN]())
    assert log == ["first", "mid1", "mid2", "late"]


# --- law 2: a rewrite is passed on -------------------------------------------------

REWRITES = {
    HookSlot.BEFORE_RUN: (lambda ctx: BeforeRunHookResult.proceed([AgentMessage.user("rewritten")]),
                          lambda ctx: ctx.input[0].text, "rewritten", lambda r: r.input[0].text),
    HookSlot.BEFORE_MODEL_CALL: (
        lambda ctx: ModelCallHookResult.proceed(ctx.request.model_copy(update={"messages": (AgentMessage.user("x"),)})),
        lambda ctx: ctx.request.messages[0].text, "x", lambda r: r.request.messages[0].text),
    HookSlot.ON_MODEL_CHUNK: (lambda ctx: ModelChunkHookResult.proceed(ctx.text.upper()),
                              lambda ctx: ctx.text, "ABC", lambda r: r.text),
    HookSlot.AFTER_MODEL_CALL: (
        lambda ctx: ModelResponseHookResult.proceed(ModelResponse(message=AgentMessage.assistant("edited"))),
        lambda ctx: ctx.response.message.text, "edited", lambda r: r.response.message.text),
    HookSlot.BEFORE_TOOL_CALL: (lambda ctx: ToolCallHookResult.proceed(ctx.call.with_arguments({"q": "Beijing"})),
                                lambda ctx: ctx.call.arguments["q"], "Beijing", lambda r: r.call.arguments["q"]),
    HookSlot.AFTER_TOOL_CALL: (lambda ctx: ToolResultHookResult.proceed(ToolResult.from_text("cloudy")),
                               lambda ctx: ctx.result.text, "cloudy", lambda r: r.result.text),
}


@pytest.mark.parametrize("slot", list(REWRITES), ids=lambda s: s.value)
async def test_rewrite_is_passed_to_next_hook(slot):
    rewrite, read, expected, read_result = REWRITES[slot]
    seen: list[Any] = []
    _, pipeline, events = make([("A", slot, rewrite), ("B", slot, lambda ctx: seen.append(read(ctx)))])
    result = await run_slot(pipeline, slot)
    assert seen == [expected]
    assert read_result(result) == expected
    decisions = [p for t, p in events if t == "hook.decision"]
    assert [(d["slot"], d["hook"], d["action"]) for d in decisions] == [(slot.value, "A", "rewrite")]
    assert decisions[0]["before"] != decisions[0]["after"]


# --- law 3: the first short-circuit wins -------------------------------------------

SHORT_CIRCUITS = [
    (HookSlot.BEFORE_RUN, lambda: BeforeRunHookResult.abort("no")),
    (HookSlot.BEFORE_MODEL_CALL, lambda: ModelCallHookResult.respond(RESPONSE, "no")),
    (HookSlot.BEFORE_MODEL_CALL, lambda: ModelCallHookResult.abort("no")),
    (HookSlot.ON_MODEL_CHUNK, lambda: ModelChunkHookResult.drop("no")),
    (HookSlot.ON_MODEL_CHUNK, lambda: ModelChunkHookResult.hold("no")),
    (HookSlot.ON_MODEL_CHUNK, lambda: ModelChunkHookResult.abort("no")),
    (HookSlot.AFTER_MODEL_CALL, lambda: ModelResponseHookResult.retry("no")),
    (HookSlot.AFTER_MODEL_CALL, lambda: ModelResponseHookResult.abort("no")),
    (HookSlot.BEFORE_TOOL_CALL, lambda: ToolCallHookResult.deny(ToolResult.from_text("x", is_error=True), "no")),
    (HookSlot.BEFORE_TOOL_CALL, lambda: ToolCallHookResult.defer("no")),
    (HookSlot.BEFORE_TOOL_CALL, lambda: ToolCallHookResult.abort("no")),
    (HookSlot.AFTER_TOOL_CALL, lambda: ToolResultHookResult.stop(reason="no")),
    (HookSlot.AFTER_TOOL_CALL, lambda: ToolResultHookResult.abort("no")),
    (HookSlot.ON_TURN_COMPLETION, lambda: TurnCompletionHookResult.continue_run(reason="no")),
    (HookSlot.ON_TURN_COMPLETION, lambda: TurnCompletionHookResult.abort("no")),
    (HookSlot.BEFORE_PERSIST_STATE, lambda: StatePersistenceHookResult.skip("no")),
    (HookSlot.BEFORE_PERSIST_STATE, lambda: StatePersistenceHookResult.abort("no")),
]


@pytest.mark.parametrize("slot, decide", SHORT_CIRCUITS,
                         ids=[f"{s.value}-{d().action.value}" for s, d in SHORT_CIRCUITS])
async def test_first_short_circuit_wins_later_hooks_do_not_run(slot, decide):
    later: list[str] = []
    _, pipeline, events = make([
        ("first", slot, lambda ctx: None),
        ("decider", slot, lambda ctx: decide()),
        ("later", slot, lambda ctx: later.append("ran") or decide()),
    ])
    result = await run_slot(pipeline, slot)
    expected = decide()
    assert result.action == expected.action
    assert result.hook == "decider"
    assert later == []
    decisions = [p for t, p in events if t == "hook.decision"]
    assert [(d["hook"], d["action"], d["reason"]) for d in decisions] == [("decider", expected.action.value, "no")]


# --- law 4: tool call id ------------------------------------------------------------

async def test_rewritten_tool_call_keeps_original_id():
    seen_ids: list[str] = []
    forged = ToolCall(id="call_xyz", name="search", arguments_json='{"q": "Beijing weather"}')
    _, pipeline, events = make([
        ("rewriter", HookSlot.BEFORE_TOOL_CALL, lambda ctx: ToolCallHookResult.proceed(forged)),
        ("auditor", HookSlot.BEFORE_TOOL_CALL, lambda ctx: seen_ids.append(ctx.call.id)),
    ])
    result = await pipeline.before_tool_call(CONTEXTS[HookSlot.BEFORE_TOOL_CALL]())
    assert result.call.id == "call_abc"
    assert result.call.arguments == {"q": "Beijing weather"}
    assert seen_ids == ["call_abc"]
    decision = next(p for t, p in events if t == "hook.decision")
    assert decision["call_id"] == "call_abc"
    assert decision["after"]["id"] == "call_abc"


# --- law 5: injected messages ----------------------------------------------------------

async def test_injected_messages_accumulate_in_hook_order_and_survive_stop():
    note = AgentMessage.user
    _, pipeline, _ = make([
        ("audit", HookSlot.AFTER_TOOL_CALL, lambda ctx: ToolResultHookResult.proceed(None, [note("audit 1")])),
        ("safety", HookSlot.AFTER_TOOL_CALL,
         lambda ctx: ToolResultHookResult.proceed(None, [note("safety 1"), note("safety 2")])),
        ("stopper", HookSlot.AFTER_TOOL_CALL,
         lambda ctx: ToolResultHookResult.stop(ToolResult.from_text("final"), [note("stop 1")], "enough")),
        ("never", HookSlot.AFTER_TOOL_CALL, lambda ctx: ToolResultHookResult.proceed(None, [note("never")])),
    ])
    result = await pipeline.after_tool_call(CONTEXTS[HookSlot.AFTER_TOOL_CALL]())
    assert result.action == "stop"
    assert [m.text for m in result.injected_messages] == ["audit 1", "safety 1", "safety 2", "stop 1"]
    assert result.result.text == "final"
    assert result.reason == "enough"


async def test_injected_messages_accumulate_when_everyone_proceeds():
    _, pipeline, _ = make([
        (n, HookSlot.AFTER_TOOL_CALL, lambda ctx, n=n: ToolResultHookResult.proceed(None, [AgentMessage.user(n)]))
        for n in ("one", "two", "three")])
    result = await pipeline.after_tool_call(CONTEXTS[HookSlot.AFTER_TOOL_CALL]())
    assert result.action == "proceed"
    assert [m.text for m in result.injected_messages] == ["one", "two", "three"]


# --- mandatory persistence -------------------------------------------------------------

async def test_mandatory_persistence_ignores_skip_but_honours_abort():
    _, pipeline, events = make([
        ("skipper", HookSlot.BEFORE_PERSIST_STATE, lambda ctx: StatePersistenceHookResult.skip("noise")),
        ("aborter", HookSlot.BEFORE_PERSIST_STATE,
         lambda ctx: StatePersistenceHookResult.abort("disk policy") if ctx.reason == "blocked" else None),
    ])
    mandatory = StatePersistenceHookContext(**BASE, reason="terminal", mandatory=True)
    assert (await pipeline.before_persist_state(mandatory)).action == "proceed"
    decision = [p for t, p in events if t == "hook.decision"][-1]
    assert (decision["hook"], decision["action"], decision["ignored"]) == ("skipper", "skip", True)

    optional = StatePersistenceHookContext(**BASE, reason="after_model_text", mandatory=False)
    skipped = await pipeline.before_persist_state(optional)
    assert (skipped.action, skipped.hook) == ("skip", "skipper")

    blocked = StatePersistenceHookContext(**BASE, reason="blocked", mandatory=True)
    aborted = await pipeline.before_persist_state(blocked)
    assert (aborted.action, aborted.hook, aborted.reason) == ("abort", "aborter", "disk policy")


# --- observers -------------------------------------------------------------------------

async def test_after_run_hook_exceptions_become_diagnostics_and_every_observer_runs():
    log: list[str] = []

    def broken(ctx):
        log.append("broken")
        raise RuntimeError("metrics backend down")

    _, pipeline, events = make([("broken", HookSlot.AFTER_RUN, broken),
                                ("audit", HookSlot.AFTER_RUN, lambda ctx: log.append("audit"))])
    failed = await pipeline.after_run(AfterRunHookContext(**BASE))
    assert log == ["broken", "audit"]
    assert failed == ["broken"]
    diagnostics = [p for t, p in events if t == "hook.diagnostic"]
    assert [(d["slot"], d["hook"], d["kind"]) for d in diagnostics] == [("after_run", "broken", "exception")]
    assert "metrics backend down" in diagnostics[0]["message"]


# --- failures: fail-open and fail-closed -----------------------------------------------

def _raise(ctx):
    raise RuntimeError("hook bug")


async def _too_slow(ctx):
    await asyncio.sleep(10)


FAILURES = {
    "exception": (_raise, {}),
    "timeout": (_too_slow, {"timeout": 0.01}),
    "invalid_result": (lambda ctx: "not a result", {}),
}


@pytest.mark.parametrize("kind", list(FAILURES))
async def test_failing_hook_is_fail_open_with_diagnostic_and_value_unchanged(kind):
    fn, options = FAILURES[kind]
    seen: list[dict] = []
    _, pipeline, events = make([
        ("upper", HookSlot.BEFORE_TOOL_CALL, lambda ctx: ToolCallHookResult.proceed(ctx.call.with_arguments({"q": "A"}))),
        ("failing", HookSlot.BEFORE_TOOL_CALL, fn),
        ("next", HookSlot.BEFORE_TOOL_CALL, lambda ctx: seen.append(ctx.call.arguments)),
    ], failing=options)
    result = await pipeline.before_tool_call(CONTEXTS[HookSlot.BEFORE_TOOL_CALL]())
    assert result.action == "proceed"
    assert result.call.arguments == {"q": "A"}  # as it was before the failing hook
    assert seen == [{"q": "A"}]                 # the pipeline went on
    diagnostics = [p for t, p in events if t == "hook.diagnostic"]
    assert [(d["slot"], d["hook"], d["kind"], d["fail_closed"]) for d in diagnostics] == [
        ("before_tool_call", "failing", kind, False)]


@pytest.mark.parametrize("kind", list(FAILURES))
@pytest.mark.parametrize("slot", list(CONTEXTS), ids=lambda s: s.value)
async def test_fail_closed_hook_failure_becomes_hook_abort(slot, kind):
    fn, options = FAILURES[kind]
    later: list[str] = []
    _, pipeline, events = make([("guard", slot, fn), ("later", slot, lambda ctx: later.append("ran"))],
                               guard={"fail_closed": True, **options})
    result = await run_slot(pipeline, slot)
    assert result.action == "abort"
    assert result.hook == "guard"
    assert (result.error.layer, result.error.code) == ("security", "hook_abort")
    assert later == []
    types = [t for t, _ in events]
    assert types == ["hook.diagnostic", "hook.decision"]
    assert events[0][1]["fail_closed"] is True
    assert (events[1][1]["hook"], events[1][1]["action"]) == ("guard", "abort")


async def test_sync_hook_with_timeout_is_bounded():
    import threading
    release = threading.Event()
    _, pipeline, events = make([("blocking", HookSlot.BEFORE_RUN, lambda ctx: release.wait(5))],
                               blocking={"timeout": 0.05})
    try:
        result = await pipeline.before_run(CONTEXTS[HookSlot.BEFORE_RUN]())
    finally:
        release.set()
    assert result.action == "proceed"
    assert [(p["hook"], p["kind"]) for t, p in events if t == "hook.diagnostic"] == [("blocking", "timeout")]


async def test_hook_raising_ark_error_is_still_fail_open():
    def fails(ctx):
        raise ArkError("tool", "tool_failed", "boom")

    _, pipeline, events = make([("fails", HookSlot.AFTER_TOOL_CALL, fails)])
    result = await pipeline.after_tool_call(CONTEXTS[HookSlot.AFTER_TOOL_CALL]())
    assert (result.action, result.result) == ("proceed", RESULT)
    assert [t for t, _ in events] == ["hook.diagnostic"]


# --- hook.decision payloads --------------------------------------------------------

async def test_hook_decision_events_carry_hook_name_and_before_after():
    _, pipeline, events = make([
        ("redact", HookSlot.ON_MODEL_CHUNK, lambda ctx: ModelChunkHookResult.proceed(ctx.text.replace("b", "*"))),
        ("deny_all", HookSlot.BEFORE_TOOL_CALL,
         lambda ctx: ToolCallHookResult.deny(ToolResult.from_text("refused", is_error=True), "policy")),
    ])
    await pipeline.on_model_chunk(ModelChunkHookContext(**BASE, text="abc", index=4))
    await pipeline.before_tool_call(CONTEXTS[HookSlot.BEFORE_TOOL_CALL]())
    decisions = [p for t, p in events if t == "hook.decision"]
    assert decisions[0] == {"slot": "on_model_chunk", "hook": "redact", "action": "rewrite", "reason": None,
                            "before": {"text": "abc", "reasoning": ""}, "after": {"text": "a*c", "reasoning": ""},
                            "index": 4}
    assert decisions[1]["hook"] == "deny_all" and decisions[1]["action"] == "deny"
    assert decisions[1]["before"]["id"] == "call_abc"
    assert decisions[1]["after"]["contents"][0]["text"] == "refused"


async def test_unchanged_proceed_publishes_no_decision():
    _, pipeline, events = make([(s.value, s, lambda ctx: None) for s in CONTEXTS]
                               + [("echo", HookSlot.BEFORE_TOOL_CALL, lambda ctx: ToolCallHookResult.proceed(ctx.call))])
    for slot in CONTEXTS:
        await run_slot(pipeline, slot)
    assert events == []


async def test_hold_on_final_flush_is_ignored_so_text_is_never_lost():
    _, pipeline, _ = make([("holder", HookSlot.ON_MODEL_CHUNK, lambda ctx: ModelChunkHookResult.hold())])
    result = await pipeline.on_model_chunk(ModelChunkHookContext(**BASE, text="tail", final=True))
    assert (result.action, result.text) == ("proceed", "tail")


async def test_filter_chunk_is_none_when_no_hook_changed_the_chunk_and_the_result_otherwise():
    _, pipeline, _ = make([
        ("watch", HookSlot.ON_MODEL_CHUNK, lambda ctx: None),
        ("same", HookSlot.ON_MODEL_CHUNK, lambda ctx: ModelChunkHookResult.proceed(ctx.text)),
    ])
    ctx = ModelChunkHookContext(**BASE, text="abc")
    assert await pipeline.filter_chunk(ctx) is None
    assert (await pipeline.on_model_chunk(ctx)).text == "abc"

    _, rewriting, _ = make([("upper", HookSlot.ON_MODEL_CHUNK,
                             lambda ctx: ModelChunkHookResult.proceed(ctx.text.upper()))])
    rewritten = await rewriting.filter_chunk(ctx)
    assert (rewritten.action, rewritten.text) == ("proceed", "ABC")

    _, dropping, _ = make([("drop", HookSlot.ON_MODEL_CHUNK, lambda ctx: ModelChunkHookResult.drop("no"))])
    dropped = await dropping.filter_chunk(ctx)
    assert (dropped.action, dropped.hook) == ("drop", "drop")
