"""The timeline's wire format and its kernel-side store: packs of chunks round-trip
exactly, the log stays bounded, and forward-reading page sources page backwards."""

import json
from types import MappingProxyType

import pytest

import arknb as ark
from arknb.domain import ArkError, FrozenDict, FrozenList
from arknb.events import AgentEvent
from arknb.widgets._timeline_store import EventLog, EventPages, ForwardPages
from arknb.widgets._timeline_wire import decode, encode, event_dict

from .timeline_trace import story


def chunk(seq, text="x", kind="text", run="r1", index=None, ts=None):
    return AgentEvent("llm.chunk", "s1", run, seq, ts if ts is not None else 1_733_000_000.0 + seq / 3,
                      {"kind": kind, "text": text, "index": seq if index is None else index}, f"{run}:{seq}")


def wire_roundtrip(events):
    items, buffers = encode(events)
    items = json.loads(json.dumps(items, ensure_ascii=False, allow_nan=False))  # what the kernel sends
    return items, decode(items, buffers)


def test_chunks_pack_and_come_back_exactly():
    events = [chunk(i, text=f"w{i} é😀\n", kind="reasoning" if i % 4 == 0 else "text", index=i // 2)
              for i in range(1, 2001)]
    items, back = wire_roundtrip(events)
    assert [i["pack"] for i in items] == ["llm.chunk"]
    assert items[0]["seq0"] == 1 and items[0]["seq"] is None  # consecutive: no sequence column
    assert back == [e.to_dict() for e in events]


def test_a_pack_holds_a_sequence_column_when_sequences_jump():
    events = [chunk(1), chunk(2), chunk(7), chunk(8)]
    items, back = wire_roundtrip(events)
    assert items[0]["seq0"] is None and isinstance(items[0]["seq"], int)
    assert back == [e.to_dict() for e in events]


def test_packs_split_at_other_runs_and_other_events_and_odd_chunks_go_whole():
    other = AgentEvent("tool.before", "s1", "r1", 4, 5.0, {"call": {"id": "c1"}}, "r1:4")
    odd = AgentEvent("llm.chunk", "s1", "r1", 7, 8.0, {"kind": "text", "text": "x", "index": 0, "extra": 1}, "r1:7")
    events = [chunk(1), chunk(2), chunk(3, run="r2"), other, chunk(5), chunk(6), odd, chunk(8), chunk(9)]
    items, back = wire_roundtrip(events)
    shapes = [("pack" if "pack" in i else "whole", i.get("n", 1)) if i.get("type", "llm.chunk") == "llm.chunk"
              else i["type"] for i in items]
    assert shapes == [("pack", 2), ("whole", 1), "tool.before", ("pack", 2), ("whole", 1), ("pack", 2)]
    assert back == [e.to_dict() for e in events]


def test_recorded_dicts_pack_too_and_mixed_shapes_go_whole():
    dicts = [chunk(i).to_dict() for i in range(1, 6)]
    items, back = wire_roundtrip(dicts)
    assert [i.get("pack") for i in items] == ["llm.chunk"] and back == dicts
    mixed = [chunk(1), chunk(2).to_dict(), chunk(3)]
    items, back = wire_roundtrip(mixed)
    assert all("pack" not in i for i in items) and back == [chunk(i).to_dict() for i in (1, 2, 3)]


def test_read_only_payloads_are_made_plain():
    frozen = AgentEvent("tool.after", "s1", "r1", 1, 1.0,
                        MappingProxyType({"call": MappingProxyType({"id": "c1"}), "items": (1, 2)}), "r1:1")
    assert event_dict(frozen)["payload"] == {"call": {"id": "c1"}, "items": [1, 2]}
    json.dumps(event_dict(frozen))


async def test_runtime_payloads_are_json_ready_all_the_way_down():
    """event_dict checks only the top level of a runtime payload (the hot path): this
    guards the contract that the runtime builds payloads from JSON values (its dicts and
    lists frozen, DESIGN §4), which json encodes unchanged."""
    model = ark.ScriptedModel([
        ark.ScriptedTurn(text=["a", "b"], tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
        ark.ScriptedTurn(text=["3"])])

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    runtime = ark.AgentRuntime(model, tools=[add])
    seen = []
    runtime.bus.subscribe("*", seen.append)
    await runtime.run("go")

    def plain(v):
        if type(v) in (str, int, float, bool, type(None)):
            return True
        if type(v) is dict or isinstance(v, FrozenDict):
            return all(type(k) is str and plain(x) for k, x in v.items())
        if type(v) is list or isinstance(v, FrozenList):
            return all(map(plain, v))
        return False

    bad = [(e.type, e.payload) for e in seen if not plain(dict(e.payload))]
    assert bad == []
    assert all(json.loads(json.dumps(e.payload)) == e.payload for e in seen)
    wire = [event_dict(e) for e in seen]
    assert [w["payload"] for w in wire] == [dict(e.payload) for e in seen]
    assert {e.type for e in seen} >= {"agent.started", "llm.chunk", "tool.after", "turn.completed", "agent.success"}


def test_the_log_is_bounded_after_a_trim_and_keeps_positions():
    log = EventLog(3)
    for i in range(10):
        log.append(i)
    assert len(log) == 10 and log.next == 10  # the listener never trims
    assert log.trim() == 7 and log.first == 7 and log.kept() == [7, 8, 9]
    assert log.slice(0, 9) == [7, 8] and log.slice(8, 100) == [8, 9] and log.slice(20, 30) == []
    with pytest.raises(ArkError, match="max_events must be a positive int or None"):
        EventLog(0)


class Outbox:
    def __init__(self, events):
        self.events = events
        self.calls = 0

    def read(self, *, after_sequence=None, limit=None):  # a sync reader works too
        self.calls += 1
        out = [e for e in self.events if after_sequence is None or e["sequence"] > after_sequence]
        return out[:limit] if limit is not None else out


async def test_forward_pages_find_the_newest_page_below_a_sequence_despite_gaps():
    events = [e for e in story() if e["type"] != "llm.chunk"]  # an outbox: sequence gaps
    pages = ForwardPages(Outbox(events).read)
    assert isinstance(pages, EventPages)
    for before in (3, 10, 25, 36, 100):
        for limit in (1, 4, 50):
            want = [e for e in events if e["sequence"] < before][-limit:]
            assert await pages.read_before(before, limit) == want, (before, limit)
    assert await pages.read_before(None, 3) == events[-3:]
    assert await pages.read_before(5, 0) == []


async def test_forward_pages_walk_all_of_a_long_source_once_for_the_newest_page():
    events = [{"sequence": i, "type": "x"} for i in range(1, 5001)]
    source = Outbox(events)
    assert await ForwardPages(source.read).read_before(None, 10) == events[-10:]
    assert source.calls == 6  # 1000 at a time, and one short read at the end
    with pytest.raises(ArkError, match="needs a callable"):
        ForwardPages(None)
