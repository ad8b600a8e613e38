"""The seam between key resolution and the runtime: ``observe_secrets`` (DESIGN §9).

Every key a client hands out is reported to its observers before the request that
uses it is sent: a static key and an environment variable's value at once, a
callable's value when it is first resolved (and each rotated value).
"""

from __future__ import annotations

import gc

import pytest
from pydantic import SecretStr

from arknb.domain import AgentMessage, ArkError, ModelRequest
from arknb.providers.openai_compat import ApiKey, OpenAICompatibleClient, deepseek, from_env, local
from openai_sse_server import Reply, chunk, sse

KEY = "arknb-observed-key-4b9e1f0a7c2d"


def req() -> ModelRequest:
    return ModelRequest(messages=(AgentMessage.user("hi"),))


def ok() -> Reply:
    return Reply([sse(chunk("ok", finish="stop"))])


class Recorder:
    def __init__(self, server=None) -> None:
        self.seen: list[tuple[str, int]] = []
        self.server = server

    def learn(self, secret: SecretStr) -> None:
        assert isinstance(secret, SecretStr)
        self.seen.append((secret.get_secret_value(), len(self.server.requests) if self.server else -1))


def test_a_static_key_is_reported_on_registration():
    client = OpenAICompatibleClient(local(), api_key=KEY, model="m")
    recorder = Recorder()
    client.observe_secrets(recorder.learn)
    assert recorder.seen == [(KEY, -1)]


def test_the_environment_variables_value_is_reported_on_registration(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    client = OpenAICompatibleClient(deepseek(), model="deepseek-chat")
    recorder = Recorder()
    client.observe_secrets(recorder.learn)
    assert [value for value, _ in recorder.seen] == [KEY]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_callables_key_is_reported_before_its_request_is_sent(server, make_client, kind):
    keys = iter([f"{KEY}-1", f"{KEY}-2", f"{KEY}-2"])

    def sync_provider():
        return next(keys)

    async def async_provider():
        return SecretStr(next(keys))

    client = make_client(api_key=sync_provider if kind == "sync" else async_provider)
    recorder = Recorder(server)
    client.observe_secrets(recorder.learn)
    assert recorder.seen == []   # nothing resolved yet
    server.script(ok(), ok(), ok())
    for _ in range(3):
        await client.generate(req())
    # Reported once per new value, each before the request that carried it arrived.
    assert recorder.seen == [(f"{KEY}-1", 0), (f"{KEY}-2", 1)]
    assert [r.headers["authorization"] for r in server.requests] == [
        f"Bearer {KEY}-1", f"Bearer {KEY}-2", f"Bearer {KEY}-2"]


async def test_a_failing_observer_stops_the_request(server, make_client):
    client = make_client(api_key=lambda: KEY)

    def broken(secret: SecretStr) -> None:
        raise RuntimeError("cannot learn")
    client.observe_secrets(broken)
    with pytest.raises(ArkError) as info:
        await client.generate(req())
    assert info.value.code == "secret_observer_failed" and server.requests == []
    assert KEY not in str(info.value)


async def test_observers_stop_and_bound_methods_are_held_weakly():
    key = ApiKey(lambda: KEY)
    recorder, kept = Recorder(), Recorder()
    key.observe(recorder.learn)
    stop = key.observe(kept.learn)
    del recorder
    gc.collect()
    stop()
    await key.get()
    assert kept.seen == [] and key._observers == []


def test_credential_headers_are_hidden_and_reported():
    client = OpenAICompatibleClient(local(), model="m", headers={"api-key": KEY, "X-Trace": "visible-value-123"})
    recorder = Recorder()
    client.observe_secrets(recorder.learn)
    assert [value for value, _ in recorder.seen] == [KEY]
    assert client._key.redact(f"echo {KEY}") == "echo [redacted]"


def test_from_env_reads_nothing_until_asked(monkeypatch):
    monkeypatch.delenv("ARKNB_OBSERVED_KEY", raising=False)
    key = ApiKey(from_env("ARKNB_OBSERVED_KEY"))
    assert key.known() == ()
    monkeypatch.setenv("ARKNB_OBSERVED_KEY", KEY)
    assert [s.get_secret_value() for s in key.known()] == [KEY]


async def test_a_recording_wrapper_forwards_the_seam(server, make_client, tmp_path):
    """``ev.Recorder`` wraps a client: a callable key resolved through it is still learnt
    by the runtime, and kept out of the cassette."""
    import arknb as ark
    import arknb.eval as ev

    @ark.tool
    def echo() -> str:
        """Echo the key (a careless tool)."""
        return f"key {KEY}"

    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    server.script(Reply([sse(chunk(tool_calls=[call]), chunk(finish="tool_calls"))]), ok())
    recorder = ev.Recorder(make_client(api_key=lambda: KEY), tmp_path / "calls.jsonl")
    runtime = ark.AgentRuntime(recorder, tools=[echo])
    result = await runtime.run("go")
    assert result.stop_reason == "completed", result.error
    assert runtime.state.history[2].text == "key [redacted]"
    assert KEY not in (tmp_path / "calls.jsonl").read_text()
