"""One redaction for every sink (issue 26 item 1; DESIGN §9).

The matrix (``redaction_matrix.py``): every key source x every store x {literal, escaped,
split}, each run's sinks read back (events with the live ``tool.after``, outbox and
operations rows, saved state, widget payloads, timeline and eval traces, OpenTelemetry
attributes, the cassette, every file written) and grepped for the key, its escaped
forms and, for a split key, either half. Reduced here: every cell on the default
(in-memory state), durable memory, file and SQLite stores, and one form per source on PostgreSQL (rotating); the whole of it is
``benchmarks/redaction_matrix.py``. Then the promises the matrix does not show by itself:
a tool still gets the real value, a sub-agent inherits its parent's secrets, the
recorder uses the runtime's, an eval report is redacted, one report per occurrence.
"""

from __future__ import annotations

import json

import pytest

import arknb as ark
import arknb.eval as ev
from arknb import EventTypes
from arknb.domain import ToolCall
from arknb.providers.scripted import ScriptedTurn

from .redaction_matrix import FORMS, KEY, SHAPE, SOURCES, escaped, leaks, run_cell

pytest.importorskip("opentelemetry.sdk", reason="the matrix reads OpenTelemetry attributes (arknb[otel])")

PAIRS = [(source, form) for source in SOURCES for form in FORMS if not (source == "shape" and form == "split")]


@pytest.mark.parametrize("store", ["default", "memory", "file", "sqlite"])
@pytest.mark.parametrize("source,form", PAIRS)
async def test_no_sink_holds_the_key(tmp_path, source, form, store):
    cell = await run_cell(source, store, form, tmp_path)
    assert cell.failures() == []
    assert cell.reports >= 1  # each redaction announced by secret.redacted
    assert set(cell.texts) >= {"events", "tool.after", "state", "widgets", "timeline.jsonl", "trace.jsonl", "otel",
                               "cassette", "files"}
    if store in ("memory", "sqlite"):
        assert cell.texts["outbox"] and cell.texts["operations"]
    if source == "model":
        assert cell.tool_got == [KEY]  # the tool got the real value; only what is recorded is redacted


@pytest.mark.parametrize("source", SOURCES)
async def test_no_postgres_sink_holds_the_key(tmp_path, pg_dsn, source):
    form = FORMS[SOURCES.index(source) % (2 if source == "shape" else 3)]
    cell = await run_cell(source, "postgres", form, tmp_path, pg_dsn)
    assert cell.failures() == []
    assert cell.texts["outbox"] and cell.texts["operations"]
    if source == "model":
        assert cell.tool_got == [KEY]


def test_the_grep_finds_every_form():
    """The matrix's check can fail: each form of the key is found where it is."""
    assert leaks(f"x {KEY} y", KEY, "literal") == ["literal"]
    assert leaks('{"v": "%s"}' % escaped(KEY), KEY, "escaped") == ["escaped"]
    assert leaks(json.dumps(json.dumps({"v": escaped(KEY)})), KEY, "escaped") == ["escaped"]
    assert leaks(json.dumps(["a " + KEY[:13], KEY[13:]]), KEY, "split") == ["half ark...", "half 7Hq..."]
    assert leaks("a [redacted] b", KEY, "split") == []


async def test_one_secret_redacted_per_occurrence_of_a_live_tool_after():
    @ark.tool
    def twice() -> str:
        """Leak the key twice and a shaped token once."""
        return f"{KEY} and {escaped(KEY)} and {SHAPE}"

    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(tool_calls=(ToolCall(id="c", name="twice"),)), "ok"]),
                               tools=[twice], secrets=[KEY])
    events = []
    runtime.bus.subscribe(EventTypes.ANY, events.append)
    await runtime.run("go")
    after = next(i for i, e in enumerate(events) if e.type == EventTypes.TOOL_AFTER)
    text = events[after].payload["result"]["text"] if "result" in events[after].payload else events[after].to_json()
    assert leaks(events[after].to_json(), KEY, "escaped") == [] and SHAPE not in events[after].to_json()
    assert "[redacted]" in json.dumps(text)
    report = events[after + 1]
    assert report.type == EventTypes.SECRET_REDACTED and report.payload["where"] == "event tool.after"
    assert report.payload["count"] == 3
    assert set(report.payload["kinds"]) == {"configured secret #1", "sk- API key pattern"}


async def test_a_subagent_built_by_runtime_factory_inherits_the_parents_secrets(tmp_path):
    storage = ark.FileStateStorage(tmp_path)

    @ark.tool
    def leak() -> str:
        """Return the parent's key."""
        return f"the key is {KEY}"

    def factory(session_id: str) -> ark.AgentRuntime:
        model = ark.ScriptedModel([ScriptedTurn(tool_calls=(ToolCall(id="k", name="leak"),)), f"child saw {KEY}"])
        return ark.AgentRuntime(model, tools=[leak], storage=storage, session_id=session_id)

    delegate = ToolCall(id="d", name="delegate_task", arguments_json=json.dumps({"agent": "helper", "task": "look"}))
    parent = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(tool_calls=(delegate,)), "done"]), storage=storage,
                              session_id="parent", secrets=[KEY],
                              subagents=[ark.SubAgent("helper", "helps", runtime_factory=factory)])
    events = []
    parent.bus.subscribe(EventTypes.ANY, events.append)
    result = await parent.run("delegate")
    assert result.stop_reason == "completed", result.error
    assert len(list(tmp_path.glob("*.json"))) >= 2  # the child saved its own state
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(), path.name
    assert KEY not in "\n".join(e.to_json() for e in events)


async def test_the_recorder_writes_no_secret_of_the_runtime(tmp_path):
    """The model streams the runtime's secret; the cassette records the redacted stream."""
    model = ev.Recorder(ark.ScriptedModel([f"your key: {KEY} / {escaped(KEY)}"]), tmp_path / "c.jsonl")
    runtime = ark.AgentRuntime(model, secrets=[KEY])
    result = await runtime.run("show my key")
    assert KEY not in result.text
    text = (tmp_path / "c.jsonl").read_text()
    assert leaks(text, KEY, "escaped") == [] and "[redacted]" in text


async def test_an_eval_report_holds_no_key(tmp_path):
    @ark.tool
    def leak() -> str:
        """Return credentials."""
        return f"{KEY} {escaped(KEY)} {SHAPE}"

    def make_runtime(case):
        model = ark.ScriptedModel([ScriptedTurn(tool_calls=(ToolCall(id="c", name="leak"),)), f"it was {KEY}"])
        return ark.AgentRuntime(model, tools=[leak], secrets=[KEY])

    report = await ev.run_suite([ev.Case("leaky", "go")], make_runtime, progress=False)
    text = report.to_jsonl(tmp_path / "report.jsonl").read_text() + report.to_markdown()
    assert leaks(text, KEY, "escaped") == [] and SHAPE not in text and "[redacted]" in text


def test_a_trace_of_events_no_runtime_redacted_is_redacted_as_it_is_written(tmp_path):
    """Eval files pass through the same redaction as they are written: a shaped token in
    an event that did not come from a runtime (so nobody redacted it) is not written."""
    event = ark.AgentEvent("e1", EventTypes.TOOL_AFTER, "s", "r", 1, 0.0, {"text": f"token {SHAPE}"})
    ev.trace.to_jsonl([event], tmp_path / "t.jsonl")
    text = (tmp_path / "t.jsonl").read_text()
    assert SHAPE not in text and "[redacted]" in text
    assert ev.trace.from_jsonl(tmp_path / "t.jsonl")[0].payload["text"] == "token [redacted]"


async def test_a_sub_agents_events_pass_the_parents_redactor_when_republished():
    """A key the parent learns while the child runs (the child never knew it) is redacted
    from the child's events as the parent re-publishes them."""
    late = "learnt-by-the-parent-later-0123456789"
    parent: ark.AgentRuntime

    @ark.tool
    def leak() -> str:
        """The parent learns a key just now; this tool returns it."""
        parent.secret_lint.add(late)
        return f"the late key is {late}"

    def factory(session_id: str) -> ark.AgentRuntime:
        model = ark.ScriptedModel([ScriptedTurn(tool_calls=(ToolCall(id="k", name="leak"),)), "child done"])
        return ark.AgentRuntime(model, tools=[leak], session_id=session_id)

    delegate = ToolCall(id="d", name="delegate_task", arguments_json=json.dumps({"agent": "helper", "task": "look"}))
    parent = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(tool_calls=(delegate,)), "done"]),
                              subagents=[ark.SubAgent("helper", "helps", runtime_factory=factory)])
    events = []
    parent.bus.subscribe(EventTypes.ANY, events.append)
    assert (await parent.run("delegate")).stop_reason == "completed"
    child_events = [e for e in events if e.session_id != parent.session_id]
    assert any(e.type == EventTypes.TOOL_AFTER for e in child_events)
    assert late not in "\n".join(e.to_json() for e in events)
    assert any(e.type == EventTypes.SECRET_REDACTED and e.payload["where"] == "event tool.after (sub-agent)"
               for e in events)
