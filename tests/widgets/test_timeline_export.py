"""TimelineWidget.to_jsonl writes the DESIGN §11 trace format (issue 26 item 6): a header,
then one envelope per line; an empty timeline writes a readable trace; events older than
``max_events`` that were dropped are said so in the header; what it writes round-trips
through ``ev.trace.from_jsonl`` and ``TimelineWidget(events)``."""

from __future__ import annotations

import json

import arknb as ark
import arknb.eval as ev
from arknb.widgets import TimelineWidget

from .timeline_trace import as_exported, story


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_recorded_timeline_writes_a_trace_with_a_header_that_round_trips(tmp_path):
    events = story()
    path = tmp_path / "trace.jsonl"
    assert TimelineWidget(events).to_jsonl(path) == len(events)
    header, *body = _lines(path)
    assert header["arknb_trace"] == 1 and header["events"] == len(events) and header["dropped"] == 0
    exported = as_exported(events)  # the credential-shaped raw text redacted, the rest as it was
    assert body == exported and "sk-not-a-real-keyDone" not in path.read_text(encoding="utf-8")
    back = ev.trace.from_jsonl(path)
    assert [e.to_dict() for e in back] == exported
    assert TimelineWidget(back).events == exported


def test_an_empty_timeline_writes_a_trace_from_jsonl_reads(tmp_path):
    path = tmp_path / "empty.jsonl"
    assert TimelineWidget([]).to_jsonl(path) == 0
    [header] = _lines(path)
    assert header["arknb_trace"] == 1 and header["events"] == 0
    assert ev.trace.from_jsonl(path) == []
    assert TimelineWidget(ev.trace.from_jsonl(path)).events == []


async def test_a_live_timeline_past_max_events_says_how_many_older_events_the_file_lacks(tmp_path):
    runtime = ark.AgentRuntime(ark.ScriptedModel(["one", "two", "three"]))
    timeline = TimelineWidget(runtime, max_events=6, static_html=False)
    for text in ("a", "b", "c"):
        await runtime.run(text)
    assert timeline.forgotten > 0
    path = tmp_path / "live.jsonl"
    kept = len(timeline.events)
    assert timeline.to_jsonl(path) == kept
    header, *body = _lines(path)
    assert header["events"] == kept and header["dropped"] == timeline.forgotten
    assert header["first_sequence"] == body[0]["sequence"]
    assert body == timeline.events
    back = ev.trace.from_jsonl(path)
    assert [e.to_dict() for e in back] == timeline.events
    assert TimelineWidget(back).events == timeline.events
