"""First-output, idle and total timeouts; cancellation and aclose close the connection."""

from __future__ import annotations

import asyncio
import time

import pytest

from arknb.domain import AgentMessage, ArkError, CancellationToken, ModelRequest
from arknb.providers.openai_compat import RetryPolicy, Timeouts
from openai_sse_server import Reply, chunk, sse

NO_RETRY = RetryPolicy(max_retries=0)


def req() -> ModelRequest:
    return ModelRequest(messages=(AgentMessage.user("hi"),))


async def disconnected(seen, limit: float = 5.0) -> bool:
    return await asyncio.to_thread(seen.disconnected.wait, limit)


async def test_first_output_timeout(server, make_client):
    server.script(Reply([b": still thinking\n\n"], hang=True))   # comments are not output
    client = make_client(timeout=Timeouts(first_output=0.3), retry=NO_RETRY)
    started = time.monotonic()
    with pytest.raises(ArkError) as info:
        await client.generate(req())
    assert (info.value.layer, info.value.code, info.value.retryability) == ("transport", "provider_timeout", "safe")
    assert "first-output" in info.value.message
    assert time.monotonic() - started < 3
    assert await disconnected(server.requests[0])


async def test_first_output_timeout_is_retried(server, make_client, sleeps):
    server.script(Reply([], hang=True), Reply([sse(chunk("ok", finish="stop"))]))
    client = make_client(timeout=Timeouts(first_output=0.3))
    events = [e async for e in client.stream(req())]
    assert [e.type for e in events] == ["model_start", "retry", "text_delta", "model_complete"]
    assert events[1].error.code == "provider_timeout"


async def test_idle_timeout_after_output_is_an_error(server, make_client):
    server.script(Reply([sse(chunk("Hi"), done=False)], hang=True))
    client = make_client(timeout=Timeouts(idle=0.3))
    events = []
    with pytest.raises(ArkError) as info:
        async for event in client.stream(req()):
            events.append(event)
    assert info.value.code == "provider_timeout" and "idle" in info.value.message
    assert [e.type for e in events] == ["model_start", "text_delta"]
    assert len(server.requests) == 1


async def test_total_timeout_is_not_retried(server, make_client):
    server.script(Reply([sse(chunk("a"), done=False)] * 50, delay=0.05))
    client = make_client(timeout=Timeouts(total=0.4, idle=5))
    with pytest.raises(ArkError) as info:
        await client.generate(req())
    assert (info.value.code, info.value.retryability) == ("provider_timeout", "never")
    assert "total timeout" in info.value.message
    assert len(server.requests) == 1


async def test_cancel_closes_the_response(server, make_client):
    server.script(Reply([sse(chunk("Hello"), done=False)], hang=True))
    token = CancellationToken()
    events = []
    with pytest.raises(ArkError) as info:
        async for event in make_client().stream(req(), cancel=token):
            events.append(event)
            if event.type == "text_delta":
                # cancel from another task while the client waits for the next event
                asyncio.get_running_loop().call_soon(token.cancel, "user pressed Stop")
    assert (info.value.layer, info.value.code) == ("cancelled", "cancelled")
    assert [e.type for e in events] == ["model_start", "text_delta"]
    assert await disconnected(server.requests[0])
    assert asyncio.current_task().cancelling() == 0   # the guard's cancel did not leak


async def test_cancel_before_the_response_arrives(server, make_client):
    server.script(Reply([], hang=True))
    token = CancellationToken()

    async def consume():
        return [e async for e in make_client().stream(req(), cancel=token)]
    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(server.wait_for_requests, 1)
    token.cancel()
    with pytest.raises(ArkError) as info:
        await task
    assert info.value.code == "cancelled"
    assert await disconnected(server.requests[0])


async def test_cancel_from_the_consumer_itself(server, make_client):
    server.script(Reply([sse(chunk("Hello"), chunk(" world"), done=False)], hang=True))
    token = CancellationToken()
    events = []
    with pytest.raises(ArkError) as info:
        async for event in make_client().stream(req(), cancel=token):
            events.append(event)
            if event.type == "text_delta":
                token.cancel()   # e.g. a chunk hook pressing Stop, in the consuming task
    assert info.value.code == "cancelled"
    assert [e.type for e in events] == ["model_start", "text_delta"]
    assert await disconnected(server.requests[0])


async def test_cancel_during_retry_wait(server, make_client):
    token = CancellationToken()
    waiting = asyncio.Event()

    async def slow_sleep(seconds):
        waiting.set()
        await asyncio.Event().wait()   # would wait forever
    server.script(Reply.json(503, {"error": {"message": "busy"}}))
    client = make_client(retry=RetryPolicy(sleep=slow_sleep))
    task = asyncio.create_task(client.generate(req(), cancel=token))
    await waiting.wait()
    token.cancel()
    with pytest.raises(ArkError) as info:
        await task
    assert info.value.code == "cancelled"


async def test_already_cancelled_token_sends_nothing(server, make_client):
    token = CancellationToken()
    token.cancel()
    with pytest.raises(ArkError) as info:
        await make_client().generate(req(), cancel=token)
    assert info.value.code == "cancelled" and server.requests == []


async def test_aclose_of_the_generator_closes_the_response(server, make_client):
    server.script(Reply([sse(chunk("Hello"), done=False)], hang=True))
    stream = make_client().stream(req())
    async for event in stream:
        if event.type == "text_delta":
            break
    await stream.aclose()
    assert await disconnected(server.requests[0])


async def test_task_cancellation_closes_the_response(server, make_client):
    server.script(Reply([sse(chunk("Hello"), done=False)], hang=True))
    got_text = asyncio.Event()

    async def consume():
        async for event in make_client().stream(req()):
            if event.type == "text_delta":
                got_text.set()
    task = asyncio.create_task(consume())
    await got_text.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await disconnected(server.requests[0])
