"""What the model saw (DESIGN §16, issue 23 item 6): every model request carries
context_version and the ContextChanges that make it differ from the raw history; the
llm.before event shows them as a diff; the model call's durable operation records them."""

from __future__ import annotations

import arknb as ark
from arknb.durable import MemoryStore


def _before(events):
    return [e for e in events if e.type == ark.EventTypes.LLM_BEFORE]


async def test_a_plain_request_differs_only_by_the_system_prompt() -> None:
    model = ark.ScriptedModel(["one", "two"])
    runtime = ark.AgentRuntime(model, system_prompt="Be brief.")
    await runtime.run("hi")
    await runtime.run("again")
    first, second = model.requests
    assert first.context_version == 1 and second.context_version == 3
    assert [(c.source, c.kind, c.range, c.sent) for c in second.context_changes] == [
        ("system_prompt", "instructions", (0, 0), (0, 1))]


async def test_a_compressed_request_names_the_summary_and_the_range_it_replaced() -> None:
    model = ark.ScriptedModel([f"answer {i} " + "lorem " * 60 for i in range(6)])
    compressor = ark.ContextCompressor(400, keep_last=2, summarize=lambda messages: f"{len(messages)} messages")
    runtime = ark.AgentRuntime(model, compressor=compressor)
    events: list[ark.AgentEvent] = []
    runtime.bus.subscribe("*", events.append)
    for i in range(6):
        await runtime.run(f"question {i} " + "ipsum " * 20)
    last = model.requests[-1]
    (summary,) = [c for c in last.context_changes if c.kind == "summary"]
    saved = runtime.state.context_summaries[-1]
    assert summary.source == "context_compressor" and summary.range == (0, saved.end)
    assert last.messages[summary.sent[0]].text.startswith("[Summary of the first")
    assert last.context_version == len(runtime.state.history) - 1  # the answer came after the request
    context = _before(events)[-1].payload["context"]
    change = next(c for c in context["changes"] if c["kind"] == "summary")
    assert change["before"][0] == {"role": "user", "text": "question 0 " + "ipsum " * 20}  # the history side (−)
    assert change["after"][0]["text"].startswith("[Summary of the first")     # what was sent (+)


async def test_a_hook_rewrite_is_named_after_the_hook() -> None:
    model = ark.ScriptedModel(["ok"])
    runtime = ark.AgentRuntime(model)

    @runtime.hooks.before_model_call(name="polite")
    def polite(ctx):
        last = ctx.request.messages[-1]
        messages = ctx.request.messages[:-1] + (ark.AgentMessage.user(last.text + " please"),)
        return ark.ModelCallHookResult.proceed(ctx.request.model_copy(update={"messages": messages}))

    events: list[ark.AgentEvent] = []
    runtime.bus.subscribe("*", events.append)
    await runtime.run("help")
    (change,) = model.requests[0].context_changes
    assert (change.source, change.kind, change.range) == ("hook:polite", "rewrite", (0, 1))
    (shown,) = _before(events)[0].payload["context"]["changes"]
    assert shown["before"] == [{"role": "user", "text": "help"}] and shown["after"][0]["text"] == "help please"


async def test_a_skills_instructions_are_an_extension_change_recorded_on_the_operation() -> None:
    store = MemoryStore()
    skill = ark.Skill("tides", "Knows tides.", "Always give heights in metres.", always_on=True)
    model = ark.ScriptedModel(["ok"])
    runtime = ark.AgentRuntime(model, skills=[skill], system_prompt="Be brief.", storage=store, session_id="ctx1")
    await runtime.run("tides?")
    kinds = [(c.source, c.kind) for c in model.requests[0].context_changes]
    assert kinds == [("system_prompt", "instructions"), ("extension:skills", "instructions")]
    (op,) = [op for op in await store.list_operations("ctx1") if op.kind == "model_call"]
    assert op.effective_input["context"] == {"version": 1, "changes": [
        {"source": "extension:skills", "kind": "instructions", "range": [0, 0], "sent": [0, 1]}]}
    await runtime.aclose()
