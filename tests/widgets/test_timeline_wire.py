"""The timeline's wire format and its kernel-side store: column batches round-trip
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
    return AgentEvent(f"{run}:{seq}", "llm.chunk", "s1", run, seq, ts if ts is not None else 1_733_000_000.0 + seq / 3,
                      {"kind": kind, "text": text, "index": seq if index is None else index})


def wire_roundtrip(events):
    items, buffers = encode(events)
    items = json.loads(json.dumps(items, ensure_ascii=False, allow_nan=False))  # what the kernel sends
    return items, decode(items, buffers)


def test_chunks_travel_as_columns_and_come_back_exactly():
    events = [chunk(i, text=f"w{i} é😀\n", kind="reasoning" if i % 4 == 0 else "text", index=i // 2)
              for i in range(1, 2001)]
    items, back = wire_roundtrip(events)
    assert [i["batch"] for i in items] == [2000] and items[0]["chunks"]
    assert items[0]["type"] == ["llm.chunk"] and items[0]["type_at"] is None  # one type: no code column
    assert items[0]["payload"] == [] and items[0]["kind"] == ["text", "reasoning"]
    assert back == [e.to_dict() for e in events]


def test_tool_call_chunks_stay_in_the_columns_with_their_call_id_and_name():
    calls = [AgentEvent(f"r1:{seq}", "llm.chunk", "s1", "r1", seq, 1_733_000_000.0 + seq,
                        {"kind": "tool_call", "text": text, "index": 0, "call_id": call_id, "name": name})
             for seq, text, call_id, name in ((3, '{"a": ', "c1", "add"), (4, "1}", "c1", "add"), (5, "", None, None))]
    events = [chunk(1), chunk(2), *calls, chunk(6)]
    items, back = wire_roundtrip(events)
    assert items[0]["chunks"] and items[0]["payload"] == []  # every chunk in the columns, none as JSON
    assert items[0]["chunk_calls"] == [[2, "c1", "add"], [3, "c1", "add"], [4, None, None]]
    assert back == [e.to_dict() for e in events]
    items, _ = wire_roundtrip([chunk(1), chunk(2)])
    assert "chunk_calls" not in items[0]  # nothing extra in a batch without tool calls


def test_sequences_that_jump_and_ids_of_any_form_come_back_exactly():
    events = [chunk(1), chunk(2), chunk(7), chunk(2**40)]
    events[2] = AgentEvent(**{**events[2].to_dict(), "event_id": "custom-id"})
    items, back = wire_roundtrip(events)
    assert isinstance(items[0]["seq"], int)
    assert back == [e.to_dict() for e in events]


def test_texts_and_ids_travel_as_one_utf8_buffer_unless_they_cannot():
    events = [chunk(1, text="\ufeffstarts with a BOM"), chunk(2, text=""), chunk(3, text="é😀 \t\n")]
    items, back = wire_roundtrip(events)
    assert isinstance(items[0]["text"], int) and isinstance(items[0]["id"], int)
    assert back == [e.to_dict() for e in events]
    awkward = [chunk(1, text="a\0b"), chunk(2, text="lone \udc80 surrogate")]
    awkward.append(AgentEvent(**{**chunk(3).to_dict(), "event_id": "id\0with a NUL"}))
    items, back = wire_roundtrip(awkward)
    assert isinstance(items[0]["text"], list) and isinstance(items[0]["id"], list)
    assert back == [e.to_dict() for e in awkward]


def test_runs_sessions_and_other_events_share_one_batch_and_odd_chunks_go_with_the_payloads():
    other = AgentEvent("r1:4", "tool.before", "s1", "r1", 4, 5.0, {"call": {"id": "c1"}})
    foreign = AgentEvent("r9:5", "agent.started", "s2", "r9", 5, 5.5, {"input": []})
    events = [chunk(1), chunk(2), chunk(3, run="r2"), other, foreign, chunk(6), chunk(8), chunk(9)]
    items, back = wire_roundtrip(events)
    (item,) = items
    assert item["run_id"] == ["r1", "r2", "r9"] and item["session_id"] == ["s1", "s2"] and item["chunks"]
    assert item["payload"] == [{"call": {"id": "c1"}}, {"input": []}]
    assert back == [e.to_dict() for e in events]
    one_stretch = [other, chunk(5), chunk(6), chunk(7), foreign]
    items, back = wire_roundtrip(one_stretch)
    assert items[0]["payload"] == [{"call": {"id": "c1"}}, {"input": []}] and items[0]["chunks"]
    assert back == [e.to_dict() for e in one_stretch]
    odd = AgentEvent("r1:7", "llm.chunk", "s1", "r1", 7, 8.0, {"kind": "text", "text": "x", "index": 0, "extra": 1})
    events = [chunk(1), other, odd, chunk(8)]
    items, back = wire_roundtrip(events)
    assert not items[0]["chunks"] and len(items[0]["payload"]) == 4
    assert back == [e.to_dict() for e in events]


def test_recorded_dicts_travel_as_columns_and_other_shapes_go_whole():
    dicts = [chunk(i).to_dict() for i in range(1, 6)]
    items, back = wire_roundtrip(dicts)
    assert [i.get("batch") for i in items] == [5] and back == dicts
    mixed = [chunk(1), chunk(2).to_dict(), chunk(3)]
    items, back = wire_roundtrip(mixed)
    assert all("batch" not in i for i in items) and back == [chunk(i).to_dict() for i in (1, 2, 3)]
    sparse = [{"type": "note", "payload": {"text": "hi"}}, {**chunk(2).to_dict(), "extra": True}]
    items, back = wire_roundtrip(sparse)
    assert back == sparse  # missing and extra keys: sent as they are
    int_time = [{**chunk(1).to_dict(), "timestamp": 5}]
    assert wire_roundtrip(int_time)[1] == int_time


def test_read_only_payloads_are_made_plain():
    frozen = AgentEvent("r1:1", "tool.after", "s1", "r1", 1, 1.0,
                        MappingProxyType({"call": MappingProxyType({"id": "c1"}), "items": (1, 2)}))
    assert event_dict(frozen)["payload"] == {"call": {"id": "c1"}, "items": [1, 2]}
    json.dumps(event_dict(frozen))
    tuple_at_top = AgentEvent("r1:2", "tool.after", "s1", "r1", 2, 2.0, {"items": (1, 2)})
    items, back = wire_roundtrip([frozen, tuple_at_top])
    assert "batch" in items[0]
    assert [e["payload"] for e in back] == [{"call": {"id": "c1"}, "items": [1, 2]}, {"items": [1, 2]}]


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
    # The batch sends the runtime's own (frozen) payloads as they are: no per-event copy.
    (item,), _ = encode(seen)
    others = [e.payload for e in seen if e.type != "llm.chunk"]
    assert item["chunks"] and len(item["payload"]) == len(others)
    assert all(sent is own for sent, own in zip(item["payload"], others))


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
