"""arknb against a real llama.cpp ``llama-server`` running SmolLM2-135M-Instruct (issue 24 item 4).

Nothing here is a server we wrote: streaming, usage, finish reasons, a cancel the server
sees, two runtimes at once, and a refused image, all through ``OpenAICompatibleClient``.
The server comes from ``conftest.py`` (one per session, two slots).
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

import arknb as ark
from arknb.providers.openai_compat import OpenAICompatibleClient, local

MODEL = "smollm2-135m"  # llama-server serves the one model it loaded, whatever the name


@pytest.fixture
async def make_client(llama_base_url):
    made = []

    def make(**profile):
        client = OpenAICompatibleClient(local(llama_base_url, think_tags=False, **profile), model=MODEL)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


def config(max_tokens: int, **extensions) -> ark.ModelConfig:
    return ark.ModelConfig(max_tokens=max_tokens, temperature=0.0, extensions={"seed": 7, **extensions})


def recorder(runtime):
    events = []
    runtime.bus.subscribe("*", events.append)
    return events


def of_type(events, etype):
    return [e for e in events if e.type == etype]


async def slots(server) -> list[dict]:
    async with httpx.AsyncClient(timeout=5.0) as http:
        response = await http.get(server.root_url + "/slots")
        response.raise_for_status()
        return response.json()


async def metrics(server) -> dict[str, float]:
    async with httpx.AsyncClient(timeout=5.0) as http:
        text = (await http.get(server.root_url + "/metrics")).text
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


async def test_streamed_text_and_usage_through_the_runtime(make_client):
    runtime = ark.AgentRuntime(make_client(), system_prompt="You are a helpful assistant.", config=config(24))
    events = recorder(runtime)
    result = await runtime.run("Say hello in one short sentence.")
    assert result.stop_reason == "completed", result.error
    chunks = [e.payload["text"] for e in of_type(events, "llm.chunk") if e.payload.get("kind", "text") == "text"]
    assert len(chunks) > 1, "the answer arrived in one piece: not streamed"
    assert "".join(chunks) == result.final_message.text and result.final_message.text.strip()
    (after,) = of_type(events, "llm.after")
    assert after.payload["finish_reason"] in ("stop", "length")
    # Usage as the server counted it (SmolLM2's chat template wraps the prompt: more than our words).
    assert result.usage.input_tokens > 10 and 0 < result.usage.output_tokens <= 24


async def test_a_chat_widget_shows_the_real_answer_as_it_streams(make_client):
    from arknb.widgets import ChatWidget
    from tests.widgets.chat_front import ChatFront

    runtime = ark.AgentRuntime(make_client(), config=config(20))
    chat = ChatWidget(runtime)
    front = ChatFront(chat)
    done = asyncio.Event()
    runtime.bus.subscribe("agent.success", lambda _e: done.set())
    chat._on_msg(chat, {"type": "send", "text": "Name a colour.", "request_id": "r1"})
    await asyncio.wait_for(done.wait(), 60)
    while runtime.is_running:
        await asyncio.sleep(0.01)
    chat._flush()
    entries = chat.transcript["entries"]
    assert [e["kind"] for e in entries] == ["user", "assistant"]
    assert entries[1]["text"] == runtime.state.history[-1].text and entries[1]["text"].strip()
    assert front.entries == entries  # the view, folded from snapshot + deltas, says the same
    assert len([op for op in front.ops() if op[0] == "text"]) >= 1  # the text came as stream deltas
    assert chat.status == "completed" and "Name a colour." in chat.to_html()
    chat.close()


async def test_an_answer_cut_at_max_tokens_ends_with_finish_reason_length(make_client):
    runtime = ark.AgentRuntime(make_client(), config=config(6))
    events = recorder(runtime)
    result = await runtime.run("Write a long story about a dragon who learns to bake bread.")
    (after,) = of_type(events, "llm.after")
    assert after.payload["finish_reason"] == "length"
    assert result.usage.output_tokens == 6 and result.final_message.text
    assert result.truncated is True and of_type(events, "llm.truncated")


async def test_cancel_mid_stream_closes_the_request_and_the_server_frees_the_slot(make_client, llama_server):
    # ignore_eos: the model cannot end early on its own; only the cancel stops it.
    runtime = ark.AgentRuntime(make_client(extensions=["ignore_eos"]), config=config(1500, ignore_eos=True))
    first_chunk = asyncio.Event()
    runtime.bus.subscribe("llm.chunk", lambda _e: first_chunk.set())
    before = await metrics(llama_server)
    handle = runtime.start("Count from one to one thousand, in words, one number per line.")
    await asyncio.wait_for(first_chunk.wait(), 60)
    assert any(s.get("is_processing") for s in await slots(llama_server)), "no slot was busy mid-stream"
    runtime.cancel()
    result = await handle
    assert result.stop_reason == "cancelled"
    cancelled_at = time.monotonic()
    # The server sees the closed connection and stops generating: the slot is idle again long
    # before 1500 tokens (minutes at this machine's speed) could have been generated.
    deadline = cancelled_at + 20.0
    while any(s.get("is_processing") for s in await slots(llama_server)):
        assert time.monotonic() < deadline, "the server kept generating after the client disconnected"
        await asyncio.sleep(0.1)  # the server's state, polled: nothing to await
    after = await metrics(llama_server)
    generated = after.get("llamacpp:tokens_predicted_total", 0) - before.get("llamacpp:tokens_predicted_total", 0)
    assert generated < 1500, f"the server generated {generated} tokens: it never saw the disconnect"
    # And the slot takes the next request at once.
    again = ark.AgentRuntime(make_client(), config=config(4))
    assert (await again.run("Hi")).stop_reason == "completed"


async def test_two_runtimes_stream_from_one_server_at_once(make_client, llama_server):
    assert len(await slots(llama_server)) >= 2, "the server was started with fewer than two slots (-np)"
    stamps: dict[str, list[float]] = {"a": [], "b": []}
    runtimes = {}
    for name in stamps:
        runtimes[name] = ark.AgentRuntime(make_client(), config=config(24))
        runtimes[name].bus.subscribe("llm.chunk", lambda _e, n=name: stamps[n].append(time.monotonic()))
    a, b = await asyncio.gather(runtimes["a"].run("Describe the sea in three sentences."),
                                runtimes["b"].run("Describe a forest in three sentences."))
    assert a.stop_reason == b.stop_reason == "completed", (a.error, b.error)
    assert a.final_message.text.strip() and b.final_message.text.strip()
    assert len(stamps["a"]) > 3 and len(stamps["b"]) > 3
    # Streamed side by side, not one after the other: each began before the other ended.
    assert stamps["a"][0] < stamps["b"][-1] and stamps["b"][0] < stamps["a"][-1]


async def test_an_image_for_this_text_only_server_is_refused_before_any_request(make_client, llama_server):
    runtime = ark.AgentRuntime(make_client(), config=config(8))
    before = (await metrics(llama_server)).get("llamacpp:prompt_tokens_total", 0)
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
    with pytest.raises(ark.ArkError) as info:
        await runtime.run(["What is this?", ark.ContentPart.image_base64(png, "image/png")])
    assert info.value.code == "unsupported_content" and "local(images=True)" in info.value.message
    assert (await metrics(llama_server)).get("llamacpp:prompt_tokens_total", 0) == before  # nothing reached it
    assert list(runtime.state.history) == []
    result = await runtime.run("Hello")  # the session is still usable
    assert result.stop_reason == "completed", result.error
