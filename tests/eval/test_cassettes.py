"""Cassettes (DESIGN §11): recording, strict in-order replay, record modes, fork, bad files."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

import arknb as ark
import arknb.eval as ev
from arknb import ArkError

from ._kit import add, add_model, lines, record, run_add, types


async def _recorded(tmp_path: Path, name: str = "c.jsonl", **model_options):
    path = tmp_path / name
    result, events = await run_add(ev.Recorder(add_model(**model_options), path))
    assert result.stop_reason == "completed", result.error
    return path, events


# -- the file ----------------------------------------------------------------------------

async def test_recorder_writes_a_header_then_one_record_per_model_call(tmp_path):
    path, _ = await _recorded(tmp_path)
    header, *records = [json.loads(line) for line in lines(path)]
    assert header["arknb_cassette"] == 1 and header["arknb_version"] == ark.__version__ and header["created_at"]
    assert [(r["call"], r["parent"]) for r in records] == [(1, 0), (2, 1)]
    first = records[0]
    assert first["request"]["messages"] == [{"role": "user", "contents": [{"text": "What is 1 + 2?"}]}]
    assert [t["name"] for t in first["request"]["tools"]] == ["add"]
    canonical = json.dumps(first["request"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert first["request_hash"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert [e["type"] for e in first["events"]] == [
        "model_start", "text_delta", "text_delta", "tool_call_delta", "usage", "model_complete"]
    offsets = [e["offset"] for e in first["events"]]
    assert offsets == sorted(offsets) and all(o >= 0 for o in offsets)
    assert first["complete"] is True and first["error"] is None


async def test_replay_reproduces_the_recorded_event_transcript_offline(tmp_path):
    path, recorded = await _recorded(tmp_path)
    result, replayed = await run_add(ev.ReplayModel(path))
    assert result.stop_reason == "completed" and result.text == "It is 3."
    assert types(replayed) == types(recorded)
    assert ev.first_divergence(recorded, replayed) is None


async def test_a_changed_prompt_raises_cassette_mismatch_naming_file_record_and_diff(tmp_path):
    path, _ = await _recorded(tmp_path)
    result, _ = await run_add(ev.ReplayModel(path), prompt="What is 2 + 2?")
    assert result.stop_reason == "failed"
    error = result.error
    assert (error.layer, error.code) == ("config", "cassette_mismatch")
    assert str(path) in error.message and "record 1" in error.message and "(line 2)" in error.message
    assert "messages[0] (user) differs" in error.message
    assert "contents[0].text: 'What is 1 + 2?' (recorded) != 'What is 2 + 2?' (now)" in error.message


async def test_a_changed_tool_result_shows_the_first_differing_message_field_by_field(tmp_path):
    path, _ = await _recorded(tmp_path)

    @ark.tool(name="add")
    def add_wrong(a: int, b: int) -> int:
        """Add two integers."""
        return a + b + 1

    result, _ = await run_add(ev.ReplayModel(path), tools=[add_wrong])
    message = result.error.message
    assert result.error.code == "cassette_mismatch" and "model call 2 does not match record 2" in message
    assert "messages[2] (tool) differs:\n  contents[0].text: '3' (recorded) != '4' (now)" in message


async def test_running_out_of_records_raises_cassette_exhausted(tmp_path):
    path = tmp_path / "one.jsonl"
    runtime = ark.AgentRuntime(ev.Recorder(ark.ScriptedModel(["Hello!"]), path))
    assert (await runtime.run("Hi")).text == "Hello!"
    replay = ark.AgentRuntime(ev.ReplayModel(path))
    assert (await replay.run("Hi")).text == "Hello!"
    second = await replay.run("Anything else?")
    assert second.error.code == "cassette_exhausted"
    assert "1 record(s)" in second.error.message and "model call 2" in second.error.message


async def test_malformed_lines_name_file_and_line_and_the_file_is_left_alone(tmp_path):
    path, _ = await _recorded(tmp_path)
    good = lines(path)
    cases = {
        "not json": (good[:2] + ["{not json"] + good[2:], 3),
        "not an object": (good[:1] + ["[1, 2]"] + good[2:], 2),
        "no request_hash": (good[:1] + [json.dumps({**json.loads(good[1]), "request_hash": None})] + good[2:], 2),
        "bad event": (good[:2] + [json.dumps({**json.loads(good[2]), "events": [{"type": "warp"}]})], 3),
        "bad header": (["{\"hello\": 1}"] + good[1:], 1),
    }
    for name, (content, line) in cases.items():
        bad = tmp_path / f"{name.replace(' ', '_')}.jsonl"
        bad.write_text("\n".join(content) + "\n", encoding="utf-8")
        before = bad.read_bytes()
        with pytest.raises(ArkError) as info:
            ev.ReplayModel(bad)
        assert (info.value.layer, info.value.code) == ("storage", "cassette_corrupt"), name
        assert f"{bad}, line {line}" in info.value.message, (name, info.value.message)
        for make in (lambda: ev.Recorder(add_model(), bad, mode="new_episodes"), lambda: ev.Recorder(add_model(), bad)):
            with pytest.raises(ArkError):
                make()
        assert bad.read_bytes() == before, f"{name}: the file was changed"


async def test_a_line_cut_short_is_named_as_cut_and_a_bad_event_names_its_field(tmp_path):
    path, _ = await _recorded(tmp_path)
    good = lines(path)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join([good[0], good[1][:120], good[2]]) + "\n", encoding="utf-8")
    with pytest.raises(ArkError) as info:
        ev.ReplayModel(cut)
    assert info.value.code == "cassette_corrupt"
    assert f"{cut}, line 2: is not valid JSON: it is cut short" in info.value.message
    assert "control character" not in info.value.message
    event = dict(json.loads(good[1])["events"][1])
    assert event["type"] == "text_delta"
    del event["text"]
    missing = tmp_path / "missing_field.jsonl"
    missing.write_text("\n".join([good[0], json.dumps({**json.loads(good[1]), "events": [event]})]) + "\n",
                       encoding="utf-8")
    with pytest.raises(ArkError, match=r"line 2: \(record 1\) events\[0\] is not a streaming event "
                                       r"\(text_delta\.text: Field required\)"):
        ev.ReplayModel(missing)


async def test_exhaustion_after_an_interrupted_recording_says_the_cut_record_was_left_out(tmp_path):
    path, _ = await _recorded(tmp_path)
    good = lines(path)
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join([good[0], good[1], good[2][:80]]), encoding="utf-8")  # died mid-write
    replay = ev.ReplayModel(torn)
    assert replay.records == 1
    result, _ = await run_add(replay)
    assert result.error.code == "cassette_exhausted"
    assert "Its last line (line 3) is a record cut off when its recording was interrupted" in result.error.message
    # An appending recorder cuts that line off, and its new record takes the line's number.
    recorder = ev.Recorder(ark.ScriptedModel([add_model().turns[1]]), torn, mode="new_episodes")
    assert (await run_add(recorder))[0].text == "It is 3."
    assert len(lines(torn)) == 3 and json.loads(lines(torn)[2])["call"] == 2
    assert recorder._tape.records[-1].line == 3


async def test_replaying_a_conversation_twice_on_one_model_says_to_make_a_new_one(tmp_path):
    path, _ = await _recorded(tmp_path)
    replay = ev.ReplayModel(path)
    assert (await run_add(replay))[0].text == "It is 3."
    again, _ = await run_add(replay)                     # e.g. a notebook cell run a second time
    assert again.error.code == "cassette_exhausted"
    assert "none follows record 2" in again.error.message
    assert "first call again" in again.error.message and "reset()" in again.error.message
    replay.reset()
    assert (await run_add(replay))[0].text == "It is 3."


async def test_empty_and_non_utf8_files_are_corrupt(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(ArkError, match="line 1: the file is empty") as info:
        ev.ReplayModel(empty)
    assert info.value.code == "cassette_corrupt"
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"arknb_cassette": 1}\n{"x": "\xe9"}\n')
    with pytest.raises(ArkError, match=r"line 2: is not UTF-8") as info:
        ev.ReplayModel(latin)
    with pytest.raises(ArkError) as info:
        ev.ReplayModel(tmp_path / "missing.jsonl")
    assert info.value.code == "eval_file_not_found"


async def test_a_cassette_from_a_newer_arknb_is_refused(tmp_path):
    path, _ = await _recorded(tmp_path)
    content = lines(path)
    content[0] = json.dumps({"arknb_cassette": 2, "created_at": "2030-01-01T00:00:00Z", "arknb_version": "9.0"})
    path.write_text("\n".join(content) + "\n", encoding="utf-8")
    before = path.read_bytes()
    for make in (lambda: ev.ReplayModel(path), lambda: ev.Recorder(add_model(), path, mode="all"),
                 lambda: ev.fork(path, at_call=1, then=add_model())):
        with pytest.raises(ArkError) as info:
            make()
        assert (info.value.layer, info.value.code) == ("storage", "cassette_version_unsupported")
        assert "version 2" in info.value.message and "9.0" in info.value.message
    assert path.read_bytes() == before


# -- record modes ------------------------------------------------------------------------

async def test_mode_once_records_a_missing_cassette_then_only_replays(tmp_path):
    path = tmp_path / "once.jsonl"
    first = add_model()
    await run_add(ev.Recorder(first, path))
    assert len(first.requests) == 2
    unused = ark.ScriptedModel([])                      # any call to it would fail with script_exhausted
    recorder = ev.Recorder(unused, path)
    assert not recorder.recording
    result, _ = await run_add(recorder)
    assert result.text == "It is 3." and unused.requests == []
    before = path.read_bytes()
    result, _ = await run_add(ev.Recorder(unused, path), prompt="Something new")
    assert result.error.code == "cassette_mismatch" and unused.requests == []
    assert path.read_bytes() == before


async def test_mode_new_episodes_replays_what_matches_and_appends_a_branch(tmp_path):
    path, _ = await _recorded(tmp_path)
    before = path.read_bytes()

    @ark.tool(name="add")
    def add_wrong(a: int, b: int) -> int:
        """Add two integers."""
        return a + b + 1

    live = ark.ScriptedModel(["It is 4."])              # only the changed call reaches the client
    result, _ = await run_add(ev.Recorder(live, path, mode="new_episodes"), tools=[add_wrong])
    assert result.text == "It is 4." and len(live.requests) == 1
    after = path.read_bytes()
    assert after.startswith(before), "new_episodes rewrote recorded records"
    records = [json.loads(line) for line in lines(path)[1:]]
    assert [(r["call"], r["parent"]) for r in records] == [(1, 0), (2, 1), (3, 1)]
    # Both conversations replay in order from the one cassette.
    assert (await run_add(ev.ReplayModel(path)))[0].text == "It is 3."
    assert (await run_add(ev.ReplayModel(path), tools=[add_wrong]))[0].text == "It is 4."


async def test_mode_all_records_everything_again(tmp_path):
    path, _ = await _recorded(tmp_path)
    fresh = add_model(final="Three.")
    result, _ = await run_add(ev.Recorder(fresh, path, mode="all"))
    assert result.text == "Three." and len(fresh.requests) == 2
    records = [json.loads(line) for line in lines(path)[1:]]
    assert len(records) == 2 and records[1]["events"][-1]["response"]["message"]["contents"][0]["text"] == "Three."


async def test_mode_all_never_overwrites_a_file_that_is_not_a_cassette(tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"my": "data"}\n', encoding="utf-8")
    with pytest.raises(ArkError) as info:
        ev.Recorder(add_model(), notes, mode="all")
    assert info.value.code == "cassette_corrupt" and f"{notes}, line 1" in info.value.message
    assert notes.read_text(encoding="utf-8") == '{"my": "data"}\n'


async def test_recorder_creates_the_cassette_folder(tmp_path):
    path = tmp_path / "cassettes" / "deep" / "c.jsonl"
    await run_add(ev.Recorder(add_model(), path))
    assert len(lines(path)) == 3


def test_bad_arguments_are_refused():
    with pytest.raises(ArkError, match="mode must be"):
        ev.Recorder(add_model(), "x.jsonl", mode="sometimes")
    with pytest.raises(ArkError, match="LLMClient"):
        ev.Recorder(object(), "x.jsonl")
    with pytest.raises(ArkError, match="timing must be"):
        ev.ReplayModel("x.jsonl", timing="slow")


# -- fork --------------------------------------------------------------------------------

async def test_fork_replays_the_first_calls_then_sends_the_rest_to_the_live_model(tmp_path):
    path, _ = await _recorded(tmp_path)
    live = ark.ScriptedModel(["Three, from the live model."])
    model = ev.fork(path, at_call=1, then=live)
    result, events = await run_add(model)
    assert result.text == "Three, from the live model."
    assert (model.replayed, model.forwarded, len(live.requests)) == (1, 1, 1)
    assert live.requests[0].messages[-1].text == "3"    # the live model saw the replayed turn's tool result


async def test_fork_checks_replayed_requests_unless_match_is_false(tmp_path):
    path, _ = await _recorded(tmp_path)
    result, _ = await run_add(ev.fork(path, at_call=1, then=ark.ScriptedModel(["x"])), prompt="Other question")
    assert result.error.code == "cassette_mismatch"
    loose = ev.fork(path, at_call=1, then=ark.ScriptedModel(["Live answer."]), match=False)
    result, _ = await run_add(loose, prompt="Other question")
    assert result.text == "Live answer."
    with pytest.raises(ArkError, match="holds only 2 record"):
        ev.fork(path, at_call=3, then=add_model())
    with pytest.raises(ArkError, match="at_call must be"):
        ev.fork(path, at_call=-1, then=add_model())


# -- timing, errors, early ends ----------------------------------------------------------

async def test_recorded_timing_waits_for_each_events_offset(tmp_path):
    path = tmp_path / "slow.jsonl"
    slow = ark.ScriptedModel([ark.ScriptedTurn(text=["a", "b", "c"], chunk_delay=0.05)])
    await ark.AgentRuntime(ev.Recorder(slow, path)).run("go")
    record_ = json.loads(lines(path)[1])
    offsets = [e["offset"] for e in record_["events"]]
    assert offsets[-1] >= 0.1

    loop = asyncio.get_running_loop()
    request = ark.ModelRequest(messages=(ark.AgentMessage.user("go"),))
    start = loop.time()
    arrived = [loop.time() - start async for _ in ev.ReplayModel(path, timing="recorded").stream(request)]
    for got, recorded in zip(arrived, offsets):
        assert got >= recorded - 0.005, (arrived, offsets)


async def test_instant_timing_ignores_recorded_offsets(tmp_path):
    path, _ = await _recorded(tmp_path)
    content = lines(path)
    for i in (1, 2):
        rec = json.loads(content[i])
        for event in rec["events"]:
            event["offset"] = 3600.0
        content[i] = json.dumps(rec)
    path.write_text("\n".join(content) + "\n", encoding="utf-8")
    async with asyncio.timeout(60):  # an hour per event if offsets were honoured
        result, _ = await run_add(ev.ReplayModel(path))
    assert result.text == "It is 3."


async def test_a_model_error_is_recorded_and_replayed(tmp_path):
    path = tmp_path / "error.jsonl"
    error = ArkError("provider", "provider_rate_limited", "slow down", "safe", status_code=429)
    failing = ark.ScriptedModel([ark.ScriptedTurn(text=["partial"], error=error)])
    recorded = await ark.AgentRuntime(ev.Recorder(failing, path)).run("go")
    assert recorded.error.code == "provider_rate_limited"
    assert json.loads(lines(path)[1])["error"]["code"] == "provider_rate_limited"
    runtime = ark.AgentRuntime(ev.ReplayModel(path))
    events = record(runtime)
    replayed = await runtime.run("go")
    assert (replayed.stop_reason, replayed.error.code, replayed.error.status_code) == ("failed", "provider_rate_limited", 429)
    assert "llm.chunk" in types(events)


async def test_a_stream_a_hook_aborted_is_kept_and_replays_to_the_same_abort(tmp_path):
    path = tmp_path / "abort.jsonl"

    def with_abort(runtime):
        @runtime.hooks.on_model_chunk
        def stop_at_secret(ctx):
            if "secret" in ctx.text:
                return ark.ModelChunkHookResult.abort("leak")
        return runtime

    model = ark.ScriptedModel([ark.ScriptedTurn(text=["the ", "secret ", "is 42"])])
    runtime = with_abort(ark.AgentRuntime(ev.Recorder(model, path)))
    recorded = record(runtime)
    assert (await runtime.run("tell me")).stop_reason == "aborted"
    assert json.loads(lines(path)[1])["complete"] is False
    again = with_abort(ark.AgentRuntime(ev.ReplayModel(path)))
    replayed = record(again)
    assert (await again.run("tell me")).stop_reason == "aborted"
    assert ev.first_divergence(recorded, replayed) is None
    # Without the hook the replay needs events that were never recorded, and says so.
    result = await ark.AgentRuntime(ev.ReplayModel(path)).run("tell me")
    assert result.error.code == "cassette_exhausted" and "stopped reading there" in result.error.message


async def test_a_cancelled_call_is_not_recorded(tmp_path):
    path = tmp_path / "cancel.jsonl"
    model = ark.ScriptedModel(["First answer.", ark.ScriptedTurn(text=["slow"] * 50, chunk_delay=0.2)])
    runtime = ark.AgentRuntime(ev.Recorder(model, path))
    await runtime.run("one")
    chunk = asyncio.Event()
    runtime.bus.subscribe(ark.EventTypes.LLM_CHUNK, lambda e: chunk.set())
    handle = runtime.start("two")
    await chunk.wait()
    runtime.cancel()
    assert (await handle).stop_reason == "cancelled"
    assert len(lines(path)) == 2                      # the header and the first, finished call


async def test_one_instance_plays_one_conversation_at_a_time(tmp_path):
    path, _ = await _recorded(tmp_path)
    replay = ev.ReplayModel(path)
    request = ark.ModelRequest(messages=(ark.AgentMessage.user("What is 1 + 2?"),),
                               tools=(add.definition,))
    first = replay.stream(request)
    await first.__anext__()
    with pytest.raises(ArkError, match="one conversation at a time"):
        await replay.stream(request).__anext__()
    await first.aclose()


async def test_generate_replays_and_records_like_a_streamed_call(tmp_path):
    path = tmp_path / "gen.jsonl"
    request = ark.ModelRequest(messages=(ark.AgentMessage.user("Hi"),))
    response = await ev.Recorder(ark.ScriptedModel(["Hello there."]), path).generate(request)
    assert response.message.text == "Hello there."
    replay = ev.ReplayModel(path)
    assert (await replay.generate(request)).message.text == "Hello there."
    assert (replay.records, replay.played) == (1, 1)
    replay.reset()
    assert (await replay.generate(request)).message.text == "Hello there."


class _ResolvingModel(ark.ScriptedModel):
    """Resolves its key at each call and reports it first, like OpenAICompatibleClient with an env or
    callable key (its ``secret_values()`` knows the key only once resolved)."""

    KEY = "rotating-key-0123456789"   # not shaped like a known credential kind

    def __init__(self, turns) -> None:
        super().__init__(turns)
        self.observers: list = []
        self.resolved = False

    def observe_secrets(self, observer):
        self.observers.append(observer)
        return lambda: None

    def secret_values(self):
        return (self.KEY,) if self.resolved else ()

    def stream(self, request, *, cancel=None):
        self.resolved = True
        for observer in self.observers:
            observer(self.KEY)
        return super().stream(request, cancel=cancel)


async def _wrapped(wrap: str, client, path):
    """``client`` behind a Recorder, or behind a fork that sends every call on to it."""
    if wrap == "recorder":
        return ev.Recorder(client, path)
    await run_add(ev.Recorder(ark.ScriptedModel(["Hi."]), path))
    return ev.fork(path, at_call=0, then=client)


@pytest.mark.parametrize("wrap", ["recorder", "fork"])
async def test_a_key_the_wrapped_client_resolves_late_is_redacted_by_the_runtime(tmp_path, wrap):
    key = _ResolvingModel.KEY
    client = _ResolvingModel([f"The key is {key}."])
    path = tmp_path / "late.jsonl"
    runtime = ark.AgentRuntime(await _wrapped(wrap, client, path))
    events = record(runtime)
    result = await runtime.run("What is the key?")
    assert result.text == "The key is [redacted]."
    assert client.observers, "the runtime's observer never reached the wrapped client"
    assert not any(key in json.dumps(e.to_dict()) for e in events)
    assert key not in path.read_text(encoding="utf-8")


class _PrefetchingModel(_ResolvingModel):
    """Also resolves its key on ``resolve_secrets()``, as the runtime asks when a run starts."""

    async def resolve_secrets(self):
        self.resolved = True
        for observer in self.observers:
            observer(self.KEY)


@pytest.mark.parametrize("wrap", ["recorder", "fork"])
async def test_the_wrapped_client_is_asked_to_resolve_its_key_as_a_run_starts(tmp_path, wrap):
    """The user's input holds the key before any request resolved it: the wrapper forwards
    ``resolve_secrets`` so the runtime knows it before ``agent.started`` is published."""
    key = _PrefetchingModel.KEY
    client = _PrefetchingModel(["Noted."])
    path = tmp_path / "early.jsonl"
    runtime = ark.AgentRuntime(await _wrapped(wrap, client, path))
    events = record(runtime)
    await runtime.run(f"My key is {key}")
    started = [e for e in events if e.type == ark.EventTypes.AGENT_STARTED]
    assert started and not any(key in json.dumps(e.to_dict()) for e in events)
    assert key not in path.read_text(encoding="utf-8")
