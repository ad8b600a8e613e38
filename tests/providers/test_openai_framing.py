"""SSE framing and assembly on hostile byte streams, split at every kind of boundary.

The first tests run the framing (httpx-sse + ``sse.py``) and the assembler directly on
byte chunks inside an ``httpx.Response`` (no network, so hypothesis can try many
splits); the last one sends the same bytes through the loopback server.
"""

from __future__ import annotations

import asyncio
import json

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arknb.domain import AgentMessage, ModelRequest
from arknb.providers.openai_compat import OpenAICompatibleClient, RetryPolicy, ThinkTagSplitter, local
from arknb.providers.openai_compat.assembler import StreamAssembler
from arknb.providers.openai_compat.sse import DONE, iter_chunks
from openai_sse_server import Reply, chunk


def _event(obj, eol: str) -> str:
    return f"data: {json.dumps(obj, ensure_ascii=False)}{eol}{eol}"


def hostile_body() -> bytes:
    """A stream using every framing feature at once."""
    parts = [
        "\ufeff",                                            # byte order mark
        ": keep-alive comment\r\n\r\n",                      # comment, CRLF
        _event(chunk("<thi"), "\r\n"),
        "event: message\nid: 7\n" + _event(chunk("nk>思考中 🤔"), "\n"),
        # one JSON object spread over two data lines (joined with "\n")
        'data: {"model": "test-model", "choices": [{"index": 0,\n'
        'data: "delta": {"content": "…</think>\\n\\n"}, "finish_reason": null}]}\n\n',
        ":another comment\n",
        _event(chunk("答案是 ", ), "\r"),                     # lone CR line ends
        _event(chunk("４２ — ok"), "\r\n"),
        _event(chunk(tool_calls=[{"index": 0, "id": "call_1", "type": "function",
                                  "function": {"name": "lookup", "arguments": '{"q": "日'}}]), "\n"),
        _event(chunk(tool_calls=[{"index": 0, "function": {"arguments": '本"}'}}]), "\n"),
        _event(chunk(finish="tool_calls"), "\n"),
        _event(chunk(usage={"prompt_tokens": 5, "completion_tokens": 9}, choices=False), "\r\n"),
        "data: [DONE]\r\n\r\n",
    ]
    return "".join(parts).encode()


BODY = hostile_body()


class ChunkStream(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self):
        for piece in self._chunks:
            yield piece


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in zip(points, points[1:]) if b > a]


async def assemble(chunks: list[bytes], think_tags: bool = True):
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=ChunkStream(chunks))
    assembler = StreamAssembler(think_tags=think_tags)
    events, done = [], False
    async for item in iter_chunks(response):
        if item is DONE:
            done = True
            continue
        events.extend(assembler.feed(item))
    events.extend(assembler.flush())
    return done, events, assembler.finish()


def summary(events) -> dict:
    """What must not depend on the split: joined texts and tool-call pieces."""
    return {
        "text": "".join(e.text for e in events if e.type == "text_delta"),
        "reasoning": "".join(e.text for e in events if e.type == "reasoning_delta"),
        "args": "".join(e.arguments_delta for e in events if e.type == "tool_call_delta"),
        "usage": [e.usage for e in events if e.type == "usage"],
    }


REFERENCE = asyncio.run(assemble([BODY]))


def test_reference_stream_is_understood():
    done, events, response = REFERENCE
    assert done
    assert response.message.reasoning_text == "思考中 🤔…"
    assert response.message.text == "答案是 ４２ — ok"
    (call,) = response.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "lookup", {"q": "日本"})
    assert response.usage.output_tokens == 9
    assert summary(events)["text"] == response.message.text


def test_every_single_byte_cut():
    async def run():
        for cut in range(1, len(BODY)):
            done, events, response = await assemble([BODY[:cut], BODY[cut:]])
            assert done and response == REFERENCE[2], cut
            assert summary(events) == summary(REFERENCE[1]), cut
    asyncio.run(run())


def test_one_byte_at_a_time():
    done, events, response = asyncio.run(assemble([BODY[i:i + 1] for i in range(len(BODY))]))
    assert done and response == REFERENCE[2]
    assert summary(events) == summary(REFERENCE[1])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(BODY) - 1), max_size=40))
def test_random_splits_never_change_the_response(cuts):
    done, events, response = asyncio.run(assemble(split(BODY, cuts)))
    assert done
    assert response == REFERENCE[2]
    assert summary(events) == summary(REFERENCE[1])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>/thinkx \n思")), max_size=30),
       st.text(alphabet=st.sampled_from(list("<>/thinkx \n答")), max_size=30),
       st.lists(st.integers(min_value=0, max_value=80), max_size=8))
def test_think_splitter_is_split_invariant(reasoning, answer, cuts):
    text = f"<think>{reasoning}</think>{answer}" if "</think>" not in reasoning else answer
    whole = ThinkTagSplitter()
    expected = whole.feed(text) + whole.flush()
    splitter = ThinkTagSplitter()
    got = []
    for piece in [text[a:b] for a, b in zip([0, *sorted(set(c % (len(text) + 1) for c in cuts))],
                                            [*sorted(set(c % (len(text) + 1) for c in cuts)), len(text)])]:
        got.extend(splitter.feed(piece))
    got.extend(splitter.flush())

    def joined(pairs):
        return ("".join(p for r, p in pairs if r), "".join(p for r, p in pairs if not r))
    assert joined(got) == joined(expected)


def test_done_with_surrounding_whitespace_and_no_trailing_blank_line():
    body = _event(chunk("x"), "\n").encode() + b"data:  [DONE] \n\n"
    done, _, response = asyncio.run(assemble([body]))
    assert done and response.message.text == "x"


def test_unterminated_last_event_is_not_dispatched():
    # Per the SSE spec an event without its blank line is incomplete: it is dropped,
    # so a stream cut inside "[DONE]" counts as not finished.
    body = _event(chunk("x"), "\n").encode() + b"data: [DONE]"
    done, _, _ = asyncio.run(assemble([body]))
    assert not done


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(min_value=1, max_value=len(BODY) - 1), min_size=1, max_size=12))
def test_random_splits_through_the_loopback_server(_sse_server_session, cuts):
    server = _sse_server_session
    server.reset()
    server.script(Reply(split(BODY, cuts)))

    async def run():
        async with OpenAICompatibleClient(local(server.base_url), api_key="k", model="m",
                                          retry=RetryPolicy(max_retries=0)) as client:
            request = ModelRequest(messages=(AgentMessage.user("q"),))
            return [e async for e in client.stream(request)]
    events = asyncio.run(run())
    assert events[-1].type == "model_complete"
    assert events[-1].response == REFERENCE[2]
    assert summary(events) == summary(REFERENCE[1])
