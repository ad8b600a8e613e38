"""A failed model call reports the provider's error and its retryability on every store
(issue 26 item 4): on SQLite and PostgreSQL it once read ``internal_error: TypeError:
'NoneType' object is not subscriptable``, because the response phase decoded the absent
result of a failed operation. Each failure kind is a real one: a refused connection to a
loopback port, a 401 and a 429 answered through the real OpenAI-compatible client, and a
``ScriptedModel`` with no turn left."""

from __future__ import annotations

import socket

import httpx
import pytest

import arknb as ark
from arknb.durable import OperationStatus
from arknb.providers.openai_compat import OpenAICompatibleClient, RetryPolicy, local


async def _no_sleep(_seconds: float) -> None:
    return None


def _refused_port() -> int:
    with socket.socket() as sock:  # a port nobody listens on once this closes
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answering(status: int, body: dict, headers: dict | None = None):
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body, headers=headers or {})
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


_FAILURES = {
    "connection_refused": ("transport", "provider_connection_error", "safe", None),
    "unauthorized_401": ("provider", "provider_unauthorized", "never", 401),
    "rate_limited_429": ("provider", "provider_rate_limited", "conditional", 429),
    "script_exhausted": ("config", "script_exhausted", "never", None),
}


def _model(kind: str, closers: list):
    retry = RetryPolicy(max_retries=1, sleep=_no_sleep, random=lambda: 0.0)
    if kind == "script_exhausted":
        return ark.ScriptedModel([])
    if kind == "connection_refused":
        client = OpenAICompatibleClient(local(f"http://127.0.0.1:{_refused_port()}/v1"), api_key="sk-test",
                                        model="m", retry=retry)
    else:
        status = 401 if kind == "unauthorized_401" else 429
        message = "Incorrect API key" if status == 401 else "slow down"
        http = _answering(status, {"error": {"message": message, "code": f"code_{status}"}})
        closers.append(http)
        client = OpenAICompatibleClient(local("http://127.0.0.1:9/v1"), api_key="sk-test", model="m",
                                        retry=retry, http_client=http)
    closers.append(client)
    return client


def _store(name: str, tmp_path, request):
    if name == "memory":
        return None
    if name == "file":
        return ark.FileStateStorage(tmp_path / "files")
    if name == "sqlite":
        return ark.SQLiteStore(tmp_path / "s.db")
    return ark.PostgresStore(request.getfixturevalue("pg_dsn"))


@pytest.mark.parametrize("kind", sorted(_FAILURES))
@pytest.mark.parametrize("store_name", ["memory", "file", "sqlite", "postgres"])
async def test_a_failed_model_call_reports_the_providers_error_and_retryability_on_every_store(
        kind, store_name, tmp_path, request):
    closers: list = []
    store = _store(store_name, tmp_path, request)
    runtime = ark.AgentRuntime(_model(kind, closers), storage=store, session_id="s1")
    announced = []
    runtime.bus.subscribe(ark.EventTypes.AGENT_ERROR, announced.append)
    try:
        result = await runtime.run("hello")
        assert result.stop_reason == "failed"
        err = result.error
        assert (err.layer, err.code, err.retryability, err.status_code) == _FAILURES[kind], str(err)
        assert "NoneType" not in err.message and err.code != "internal_error"
        if kind in ("unauthorized_401", "rate_limited_429"):
            assert ("Incorrect API key" if kind == "unauthorized_401" else "slow down") in err.message
        assert [e.payload["error"]["code"] for e in announced] == [_FAILURES[kind][1]]
        if store_name in ("sqlite", "postgres"):
            operations = await store.list_operations("s1")
            assert [(op.kind, op.status) for op in operations] == [("model_call", OperationStatus.FAILED)]
            assert operations[0].error.code == _FAILURES[kind][1]
            outbox = [e for e in await store.read_events("s1") if e.type == ark.EventTypes.AGENT_ERROR]
            assert [e.payload["error"]["code"] for e in outbox] == [_FAILURES[kind][1]]
    finally:
        await runtime.aclose()
        for closer in closers:
            await closer.aclose()


@pytest.mark.parametrize("store_name", ["sqlite", "postgres"])
async def test_after_a_failed_model_call_the_next_run_of_the_durable_session_succeeds(store_name, tmp_path, request):
    store = _store(store_name, tmp_path, request)
    model = ark.ScriptedModel(["fine now"])
    calls = []

    class FlakyOnce:
        async def stream(self, request, *, cancel=None):
            if not calls:
                calls.append(1)
                raise ark.ArkError("provider", "provider_rate_limited", "slow down", "conditional", status_code=429)
            async for event in model.stream(request, cancel=cancel):
                yield event

    runtime = ark.AgentRuntime(FlakyOnce(), storage=store, session_id="s1")
    try:
        first = await runtime.run("hello")
        assert (first.stop_reason, first.error.code) == ("failed", "provider_rate_limited")
        second = await runtime.run("again")
        assert (second.stop_reason, second.final_message.text) == ("completed", "fine now")
    finally:
        await runtime.aclose()
