"""HTTP status → ArkError, retries with ``retry`` events, Retry-After (seed 003 §5.5)."""

from __future__ import annotations

import pytest

from arknb.domain import AgentMessage, ArkError, ModelRequest
from arknb.providers.openai_compat import RetryPolicy
from arknb.providers.openai_compat.errors import error_from_status, retry_after_seconds
from openai_sse_server import Reply, chunk, sse

OK = Reply([sse(chunk("fine", finish="stop"))])


def req() -> ModelRequest:
    return ModelRequest(messages=(AgentMessage.user("hi"),))


async def run(client):
    events = []
    try:
        async for event in client.stream(req()):
            events.append(event)
    except ArkError as exc:
        return events, exc
    return events, None


@pytest.mark.parametrize("status, code, retryability", [
    (400, "provider_bad_request", "never"), (401, "provider_unauthorized", "never"),
    (402, "provider_payment_required", "never"), (403, "provider_forbidden", "never"),
    (404, "provider_not_found", "never"), (422, "provider_bad_request", "never"),
    (429, "provider_rate_limited", "conditional"), (500, "provider_unavailable", "safe"),
    (502, "provider_unavailable", "safe"), (503, "provider_unavailable", "safe"),
    (504, "provider_unavailable", "safe"), (501, "provider_http_error", "never"),
])
def test_status_table(status, code, retryability):
    err = error_from_status(status, b'{"error": {"message": "m", "code": "c"}}', provider="p")
    assert (err.layer, err.code, err.retryability, err.status_code, err.provider_code) == (
        "provider", code, retryability, status, "c")


def test_envelope_shapes():
    assert error_from_status(500, b'{"error": "plain text"}', provider="p").message.endswith("plain text")
    vllm = error_from_status(400, b'{"object": "error", "message": "too long", "type": "BadRequestError", '
                                  b'"code": 400}', provider="p")
    assert vllm.provider_code == "400" and "too long" in vllm.message
    zhipu = error_from_status(429, '{"error": {"code": "1113", "message": "余额不足"}}'.encode(), provider="p")
    assert (zhipu.code, zhipu.retryability, zhipu.provider_code) == ("provider_quota_exceeded", "never", "1113")
    assert "余额不足" in zhipu.message
    assert "no error message" in error_from_status(502, b"", provider="p").message
    assert "Bad Gateway" in error_from_status(502, b"<h1>Bad Gateway</h1>", provider="p").message


def test_retry_after_parsing():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=lambda: 1445412480.0) == 10.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


async def test_401_is_never_retried(server, make_client, sleeps):
    server.script(Reply.json(401, {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}), OK)
    events, err = await run(make_client())
    assert (err.layer, err.code, err.status_code, err.provider_code) == (
        "provider", "provider_unauthorized", 401, "invalid_api_key")
    assert [e.type for e in events] == ["model_start"]
    assert len(server.requests) == 1 and sleeps.delays == []


async def test_429_honours_retry_after(server, make_client, sleeps):
    server.script(Reply.json(429, {"error": {"message": "slow down", "code": "rate_limit_exceeded"}},
                             headers={"retry-after": "7"}), OK)
    events, err = await run(make_client())
    assert err is None
    assert [e.type for e in events] == ["model_start", "retry", "text_delta", "model_complete"]
    notice = events[1]
    assert (notice.attempt, notice.delay) == (1, 7.0)
    assert (notice.error.code, notice.error.status_code, notice.error.provider_code) == (
        "provider_rate_limited", 429, "rate_limit_exceeded")
    assert sleeps.delays == [7.0]
    assert len(server.requests) == 2


async def test_retry_after_longer_than_the_policy_allows_is_not_waited_for(server, make_client, sleeps):
    server.script(Reply.json(429, {"error": {"message": "later"}}, headers={"retry-after": "3600"}), OK)
    _, err = await run(make_client())
    assert err.code == "provider_rate_limited" and sleeps.delays == []


async def test_quota_429_is_not_retried(server, make_client, sleeps):
    server.script(Reply.json(429, {"error": {"message": "quota", "code": "insufficient_quota"}}), OK)
    _, err = await run(make_client())
    assert err.code == "provider_quota_exceeded" and len(server.requests) == 1


async def test_5xx_bounded_exponential_backoff(server, make_client, sleeps):
    server.script(*[Reply.json(503, {"error": {"message": "busy"}}) for _ in range(4)])
    client = make_client(retry=RetryPolicy(max_retries=3, initial_delay=0.5, multiplier=2.0, max_delay=1.5,
                                           jitter=0.5, sleep=sleeps, random=lambda: 1.0))
    events, err = await run(client)
    assert (err.code, err.status_code) == ("provider_unavailable", 503)
    assert [e.type for e in events] == ["model_start", "retry", "retry", "retry"]
    assert [e.attempt for e in events[1:]] == [1, 2, 3]
    assert sleeps.delays == [0.25, 0.5, 0.75]   # 0.5, 1.0, capped 1.5; each minus 50 % jitter
    assert len(server.requests) == 4


async def test_jitter_stays_within_bounds():
    policy = RetryPolicy(initial_delay=1.0, jitter=0.25)
    err = ArkError("provider", "provider_unavailable", "x", "safe")
    for value in (0.0, 0.3, 0.999):
        delay = RetryPolicy(initial_delay=1.0, jitter=0.25, random=lambda v=value: v).delay(1, err, None)
        assert 0.75 <= delay <= 1.0
    assert policy.delay(3, err, None) is None   # max_retries=2


async def test_x_should_retry_false_wins(server, make_client, sleeps):
    server.script(Reply.json(500, {"error": {"message": "no"}}, headers={"x-should-retry": "false"}), OK)
    _, err = await run(make_client())
    assert err.code == "provider_unavailable" and len(server.requests) == 1


async def test_failure_after_output_is_an_error_not_a_retry(server, make_client, sleeps):
    server.script(Reply([sse(chunk("Hello"), {"error": {"message": "overloaded", "type": "server_error"}},
                             done=False)]), OK)
    events, err = await run(make_client())
    assert err.code == "provider_stream_error" and err.retryability == "safe"
    assert [e.type for e in events] == ["model_start", "text_delta"]
    assert len(server.requests) == 1 and sleeps.delays == []


async def test_retryable_stream_error_before_output_is_retried(server, make_client):
    server.script(Reply([sse({"error": {"message": "overloaded", "type": "server_error"}}, done=False)]), OK)
    events, err = await run(make_client())
    assert err is None and [e.type for e in events][:2] == ["model_start", "retry"]


async def test_connection_refused_is_a_retryable_transport_error(make_client, sleeps):
    import socket
    from arknb.providers.openai_compat import local
    with socket.socket() as s:           # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = make_client(local(f"http://127.0.0.1:{port}/v1"))
    events, err = await run(client)
    assert (err.layer, err.code, err.retryability) == ("transport", "provider_connection_error", "safe")
    assert [e.type for e in events] == ["model_start", "retry", "retry"]
