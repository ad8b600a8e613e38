"""Notebook 06_eval.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "06_eval.ipynb"

CELLS = [
    md("""
# 06 · Evaluation: record, replay, grade, compare

`arknb.eval` regression-tests an agent offline. You **record** a session once (from a
real provider, or here the scripted model standing in for one) into a *cassette*,
**replay** it with no network and no key, change a hook or a prompt and see **where the
run diverges**, run a **suite** of graded cases, **compare** two reports, and open any
trace in the **timeline**.

```python
import arknb.eval as ev
```
"""),
    code("""
import json
import tempfile
from pathlib import Path

import arknb as ark
import arknb.eval as ev

work = Path(tempfile.mkdtemp(prefix="arknb-eval-"))


@ark.tool
def convert(amount: float, currency: str) -> str:
    \"\"\"Convert euros to another currency.\"\"\"
    rates = {"USD": 1.1, "GBP": 0.85}
    return f"{amount * rates[currency]:.2f} {currency}"


def provider():
    \"\"\"Stands in for a real provider (an OpenAICompatibleClient) in this tutorial.\"\"\"
    return ark.ScriptedModel([
        ark.ScriptedTurn(text=["Let me ", "convert that."],
                         tool_calls=[ark.ToolCall(id="c1", name="convert",
                                                  arguments_json='{"amount": 20, "currency": "USD"}')],
                         usage=ark.Usage(input_tokens=60, output_tokens=12)),
        ark.ScriptedTurn(text=["20 EUR is ", "22.00 USD."], usage=ark.Usage(input_tokens=90, output_tokens=8)),
    ])
"""),
    md("""
## Record a session

`ev.Recorder(client, path)` is itself a model client: it forwards each call and
appends it to the cassette as the call ends. A cassette holds the requests (messages,
tools, config — never keys, headers or URLs) and every streamed event with its timing.
"""),
    code("""
cassette = work / "convert.jsonl"
runtime = ark.AgentRuntime(ev.Recorder(provider(), cassette), tools=[convert])
recorded = []
runtime.bus.subscribe(ark.EventTypes.ANY, recorded.append)
result = await runtime.run("How much is 20 EUR in dollars?")
print(result.text)

header, *records = [json.loads(line) for line in cassette.read_text().splitlines()]
print(sorted(header))
for r in records:
    print(f"record {r['call']}: {len(r['request']['messages'])} message(s) in, "
          f"{[e['type'] for e in r['events']][-1]} out, hash {r['request_hash'][:12]}…")
"""),
    md("""
## Replay it offline

`ev.ReplayModel(path)` plays the cassette in order. The replayed run publishes the
same events, and `ev.first_divergence` (which ignores ids, sequence numbers and
timestamps) finds no difference:
"""),
    code("""
def replay_runtime(model, tool=convert):
    rt = ark.AgentRuntime(model, tools=[tool])
    events = []
    rt.bus.subscribe(ark.EventTypes.ANY, events.append)
    return rt, events


rt, replayed = replay_runtime(ev.ReplayModel(cassette))
print((await rt.run("How much is 20 EUR in dollars?")).text)
print("first divergence:", ev.first_divergence(recorded, replayed))
"""),
    md("""
## Change a hook, see the first divergence

A hook that moves every conversion to pounds changes the tool call, so the second
model call's request no longer matches the cassette. A strict replay says exactly
where and how:
"""),
    code("""
def pounds_only(runtime):
    @runtime.hooks.before_tool_call(name="pounds_only")
    def to_gbp(ctx):
        if ctx.call.name == "convert":
            return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({**ctx.call.arguments, "currency": "GBP"}))
    return runtime


rt, _ = replay_runtime(ev.ReplayModel(cassette))
failed = await pounds_only(rt).run("How much is 20 EUR in dollars?")
print(failed.error.code)
print("\\n".join(failed.error.message.splitlines()[1:-1]))   # the diff against the recorded request
"""),
    md("""
`ev.fork(path, at_call=1, then=model)` replays the first call from the cassette and
sends the rest to another model (a live one in practice): an A/B of the hook on
recorded traffic. The first divergence is the hook's decision itself; leave the
`hook.decision` events out and it names the turn, the event and the changed field:
"""),
    code("""
live = ark.ScriptedModel(["20 EUR is 17.00 GBP."])
rt, changed = replay_runtime(ev.fork(cassette, at_call=1, then=live))
print((await pounds_only(rt).run("How much is 20 EUR in dollars?")).text)
print(ev.first_divergence(recorded, changed))           # the first thing that differs: the hook decides


def without_hook_decisions(events):
    return [e for e in events if e.type != ark.EventTypes.HOOK_DECISION]


print(ev.first_divergence(without_hook_decisions(recorded), without_hook_decisions(changed)))
"""),
    md("""
## A suite with a grader of each kind

`ev.Case(name, input, graders=[...])`; `ev.run_suite(cases, make_runtime)` runs them
concurrently on this notebook's event loop (with a progress bar) and returns a
`SuiteReport`. Every built-in grader appears once, plus an LLM judge (a scripted
model here) and a function grader made with `@ev.grader`.
"""),
    code("""
@ev.grader
def mentions_both_currencies(case, result):
    return "EUR" in result.final_text and "USD" in result.final_text


@ev.grader(threshold=0.5)
def brevity(case, result):
    return max(0.0, 1 - len(result.final_text) / 100)


judge = ark.ScriptedModel(["PASS: it gives the amount in dollars"] * 10)
cases = [
    ev.Case("exact answer", "How much is 20 EUR in dollars?",
            graders=[ev.exact("20 EUR is 22.00 USD."), ev.contains("usd", case_sensitive=False),
                     ev.regex(r"\\d+\\.\\d{2} USD")]),
    ev.Case("uses the tool", "How much is 20 EUR in dollars?",
            graders=[ev.tool_called("convert", {"currency": "USD"}), ev.trajectory(["convert"]),
                     ev.max_turns(2), ev.stop_reason("completed")]),
    ev.Case("judged", "How much is 20 EUR in dollars?",
            graders=[ev.llm_judge("The answer gives the amount in US dollars.", judge),
                     mentions_both_currencies, brevity]),
    ev.Case("structured", "How much is 20 EUR in dollars?",
            graders=[ev.json_schema({"type": "object", "required": ["usd"]})]),
]


def make_runtime(case):
    return ark.AgentRuntime(ev.ReplayModel(cassette), tools=[convert])
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
baseline = await ev.run_suite(cases, make_runtime)
"""),
    code("""
print(baseline.summary())
for row in baseline.rows:
    print(f"{row.name:<14} {row.status:<7}", "  ".join(("✓ " if g.passed else "✗ ") + g.name for g in row.grades))
"""),
    md("""
The report as a sortable table (click a column header); `report.to_markdown()` gives
the same for a terminal or a pull request:
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
baseline
"""),
    md("""
The `structured` case fails on purpose: the answer is prose, not JSON. Each grade
explains itself:
"""),
    code("""
print(baseline.row("structured").grades[0].explanation)
"""),
    md("""
## Save, reload, rescore

Reports save to JSONL with every run's events, so they can be graded again without
running anything — here with a corrected check for the structured case:
"""),
    code("""
saved = baseline.to_jsonl(work / "baseline.jsonl")
loaded = ev.SuiteReport.from_jsonl(saved)
cases[3] = ev.Case("structured", "How much is 20 EUR in dollars?", graders=[ev.regex(r"^20 EUR is \\d")])
rescored = await ev.rescore(loaded, {c.name: c.graders for c in cases})
print(rescored.summary())
"""),
    md("""
## Compare two reports

Run the suite again with the pounds hook, forking each case after the first model call
(a scripted model answers the rest, standing in for the live one). Which cases
regressed?
"""),
    code("""
def make_runtime_with_hook(case):
    model = ev.fork(cassette, at_call=1, then=ark.ScriptedModel(["20 EUR is 17.00 GBP."]))
    return pounds_only(ark.AgentRuntime(model, tools=[convert]))


candidate = await ev.run_suite(cases, make_runtime_with_hook, progress=False)
comparison = ev.compare(rescored, candidate)
print(comparison.summary())
for change in comparison.regressions:
    print(f"  {change.name}: {change.baseline_status} -> {change.candidate_status}")
print("why:", [g.explanation for g in candidate.row("exact answer").grades if not g.passed][0])
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
comparison
"""),
    md("""
`uses the tool` still passes: `tool_called` and `trajectory` look at the calls the
*model* made, and the model still asked for dollars; the hook changed the call only on
its way to the tool (the `hook.decision` and `tool.before` events show both).

From a terminal, the same suite runs as `python -m arknb.eval run suite.py --baseline
baseline.jsonl`, which prints the table and exits 1 on a failure or a regression.

## Traces in the timeline

`ev.trace.to_jsonl` / `from_jsonl` save and load any event list (a versioned file);
`TimelineWidget` opens a loaded trace:
"""),
    code("""
trace_path = work / "recorded.trace.jsonl"
print(ev.trace.to_jsonl(recorded, trace_path), "events written")
trace = ev.trace.from_jsonl(trace_path)
print(trace[0].type, "…", trace[-1].type)
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.TimelineWidget(trace)
"""),
    md("""
`TimelineWidget.compare(expected, actual)` puts two traces side by side, aligned by
turn, with the first divergence marked — here the recorded run against the one with
the pounds hook (without the hook's decisions, as above). Click an event to see both
payloads and their diff:
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.TimelineWidget.compare(without_hook_decisions(recorded), without_hook_decisions(changed),
                           labels=("recorded", "with pounds_only"))
"""),
]
