"""TimelineWidget.compare: the kernel side of the trace comparison view (no browser)."""

from __future__ import annotations

import pytest

import arknb as ark
import arknb.eval as ev
from arknb import ArkError
from arknb.widgets.compare import TraceCompareWidget

from ._kit import add_model, run_add


async def test_compare_sends_both_traces_their_turns_and_the_first_divergence():
    _, expected = await run_add(add_model(b=2))
    _, actual = await run_add(add_model(b=3))
    widget = ark.TimelineWidget.compare(expected, actual)
    assert isinstance(widget, TraceCompareWidget)
    assert widget.expected == [e.to_dict() for e in expected] and len(widget.actual) == len(actual)
    assert widget.expected_turns[0] == 0 and max(widget.expected_turns) == 2
    found = ev.first_divergence(expected, actual)
    assert widget.first_divergence == found
    # the first place they differ is the call's streamed arguments (llm.chunk kind tool_call), parsed
    assert widget.divergence == {"index": found.index, "turn": 1, "event_type": "llm.chunk",
                                 "path": "arguments.b", "expected": 2, "actual": 3, "text": str(found)}
    assert "turn 1, llm.chunk" in repr(widget)


async def test_matching_traces_have_no_divergence_and_loaded_traces_work(tmp_path):
    _, first = await run_add(add_model())
    _, second = await run_add(add_model())
    ev.trace.to_jsonl(first, tmp_path / "a.jsonl")
    widget = ark.TimelineWidget.compare(ev.trace.from_jsonl(tmp_path / "a.jsonl"), second,
                                        labels=("recorded", "replayed"))
    assert widget.divergence is None and widget.labels == ["recorded", "replayed"]
    assert "the traces match" in repr(widget)


def test_compare_refuses_what_is_not_a_trace():
    with pytest.raises(ArkError, match="events must be a list"):
        ark.TimelineWidget.compare("a.jsonl", [])
    with pytest.raises(ArkError, match="labels"):
        ark.TimelineWidget.compare([], [], labels=("only one",))
