"""ev.trace: JSONL traces with a versioned header, read back as AgentEvents."""

from __future__ import annotations

import json

import pytest

import arknb as ark
import arknb.eval as ev
from arknb import ArkError

from ._kit import add_model, lines, run_add


async def test_a_trace_round_trips_and_opens_in_the_timeline(tmp_path):
    _, events = await run_add(add_model())
    path = tmp_path / "run.trace.jsonl"
    assert ev.trace.to_jsonl(events, path) == len(events)
    header = json.loads(lines(path)[0])
    assert header["arknb_trace"] == 1 and header["events"] == len(events) and header["arknb_version"]
    loaded = ev.trace.from_jsonl(path)
    assert all(isinstance(e, ark.AgentEvent) for e in loaded)
    assert [e.to_dict() for e in loaded] == [e.to_dict() for e in events]
    assert ev.first_divergence(events, loaded) is None
    timeline = ark.TimelineWidget(loaded)
    assert timeline.read_only and len(timeline.rows()) == len(events)
    assert [s["kind"] for s in timeline.spans()].count("tool") == 1


async def test_a_timeline_export_without_header_is_read_too(tmp_path):
    _, events = await run_add(add_model())
    path = tmp_path / "export.jsonl"
    ark.TimelineWidget(events).to_jsonl(path)
    assert [e.type for e in ev.trace.from_jsonl(path)] == [e.type for e in events]


async def test_bad_traces_name_file_and_line_and_are_left_alone(tmp_path):
    _, events = await run_add(add_model())
    path = tmp_path / "t.jsonl"
    ev.trace.to_jsonl(events, path)
    good = lines(path)
    no_type = json.loads(good[3])
    del no_type["type"]
    variants = {
        "json": (good[:4] + ["{"] + good[5:], 5, "not valid JSON"),
        "field": (good[:3] + [json.dumps(no_type)] + good[4:], 4, "event field 'type' must be a string"),
        "payload": (good[:2] + [json.dumps({**json.loads(good[2]), "payload": [1]})] + good[3:], 3, "'payload'"),
        "header": (['{"hello": "world"}'] + good[1:], 1, "neither a trace header"),
        "cut": (good[:-3], None, "announces"),
    }
    for name, (content, line, text) in variants.items():
        bad = tmp_path / f"{name}.jsonl"
        bad.write_text("\n".join(content) + "\n", encoding="utf-8")
        before = bad.read_bytes()
        with pytest.raises(ArkError) as info:
            ev.trace.from_jsonl(bad)
        assert info.value.code == "trace_corrupt" and text in info.value.message, (name, info.value.message)
        assert (f"{bad}, line {line}" if line else str(bad)) in info.value.message
        assert bad.read_bytes() == before


async def test_a_newer_trace_version_is_refused(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps({"arknb_trace": 3, "arknb_version": "2.0"}) + "\n", encoding="utf-8")
    with pytest.raises(ArkError) as info:
        ev.trace.from_jsonl(path)
    assert (info.value.layer, info.value.code) == ("storage", "trace_version_unsupported")
    assert "version 3" in info.value.message
    with pytest.raises(ArkError) as info:
        ev.trace.from_jsonl(tmp_path / "absent.jsonl")
    assert info.value.code == "eval_file_not_found"


def test_to_jsonl_refuses_what_is_not_an_event(tmp_path):
    with pytest.raises(ArkError, match=r"events\[0\]"):
        ev.trace.to_jsonl([{"type": "x"}], tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()
