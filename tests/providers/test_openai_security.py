"""Secrets never leak; HTTPS only except loopback; no redirects; extensions checked first."""

from __future__ import annotations

import logging
import pickle

import pytest
from pydantic import SecretStr

from arknb.domain import AgentMessage, ArkError, ModelConfig, ModelRequest, StreamingEventAdapter
from arknb.providers.openai_compat import (
    ApiKey, OpenAICompatibleClient, deepseek, from_env, local, openai, zhipu,
)
from openai_sse_server import Reply, chunk, sse

KEY = "sk-live-THIS-MUST-NEVER-LEAK-0123456789"


def req(**config) -> ModelRequest:
    return ModelRequest(messages=(AgentMessage.user("hi"),), config=ModelConfig(**config))


async def test_key_never_appears_in_reprs_errors_events_or_logs(server, make_client, caplog, sleeps):
    caplog.set_level(logging.DEBUG)   # httpx and httpcore included
    # The server echoes the Authorization header back in its error bodies.
    echo = {"error": {"message": f"bad key Bearer {KEY}", "code": KEY}}
    server.script(Reply.json(503, echo), Reply([sse(chunk("ok"), echo, done=False)]),
                  Reply.json(401, echo))
    client = make_client(api_key=SecretStr(KEY))
    events, errors = [], []
    for _ in range(2):
        try:
            async for event in client.stream(req()):
                events.append(event)
        except ArkError as exc:
            errors.append(exc)
    assert [e.code for e in errors] == ["provider_stream_error", "provider_unauthorized"]
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"   # it was sent
    texts = [repr(client), str(client), repr(client._key), str(client._key)]
    texts += [str(e) for e in errors] + [repr(e) for e in errors] + [str(e.to_dict()) for e in errors]
    texts += [StreamingEventAdapter.dump_json(e).decode() for e in events]
    texts += [r.getMessage() for r in caplog.records] + [str(r.args) for r in caplog.records]
    assert caplog.records, "expected some log records to check"
    for text in texts:
        assert KEY not in text
    assert any("[redacted]" in str(e) for e in errors)


async def test_callable_key_provider_is_called_per_request(server, make_client):
    calls = []

    async def provider():
        calls.append(1)
        return SecretStr(f"{KEY}-{len(calls)}")
    server.script(Reply([sse(chunk("a", finish="stop"))]), Reply([sse(chunk("b", finish="stop"))]))
    client = make_client(api_key=provider)
    await client.generate(req())
    await client.generate(req())
    assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {KEY}-1", f"Bearer {KEY}-2"]
    assert "callable" in repr(client._key) and KEY not in repr(client._key)


async def test_failing_key_provider_hides_its_message(server, make_client):
    def provider():
        raise RuntimeError(f"vault said {KEY}")
    with pytest.raises(ArkError) as info:
        await make_client(api_key=provider).generate(req())
    assert info.value.code == "api_key_provider_failed" and KEY not in str(info.value)
    assert server.requests == []


def test_api_key_cannot_be_pickled():
    with pytest.raises(TypeError):
        pickle.dumps(ApiKey(KEY))


def test_missing_key_is_a_config_error(monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(ArkError) as info:
        OpenAICompatibleClient(deepseek(), model="deepseek-chat")
    assert (info.value.layer, info.value.code) == ("config", "api_key_missing")


async def test_key_from_env(monkeypatch, server, make_client):
    monkeypatch.setenv("ARKNB_TEST_KEY", KEY)
    server.script(Reply([sse(chunk("a", finish="stop"))]))
    await make_client(api_key=from_env("ARKNB_TEST_KEY")).generate(req())
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_local_profile_needs_no_key():
    client = OpenAICompatibleClient(local(), model="llama3.2")
    assert client.profile.requires_api_key is False


def test_authorization_header_must_go_through_api_key():
    with pytest.raises(ArkError):
        OpenAICompatibleClient(local(), headers={"Authorization": f"Bearer {KEY}"})


@pytest.mark.parametrize("url", ["http://api.example.com/v1", "http://10.0.0.5:11434/v1", "ftp://x.org",
                                 "api.example.com/v1", "http://localhost.evil.com/v1"])
def test_https_only_except_loopback(url):
    with pytest.raises(ArkError) as info:
        local(url)
    assert (info.value.layer, info.value.code) == ("security", "insecure_base_url")
    with pytest.raises(ArkError):
        openai(url)


@pytest.mark.parametrize("url", ["http://localhost:11434/v1", "http://127.0.0.1:8000/v1", "http://[::1]:8080/v1",
                                 "http://127.1.2.3/v1", "https://api.example.com/v1"])
def test_loopback_http_and_any_https_are_allowed(url):
    assert local(url).chat_url.endswith("/chat/completions")


def test_lan_server_needs_an_explicit_opt_in():
    assert local("http://192.168.1.20:11434/v1", allow_insecure_http=True).allow_insecure_http


async def test_redirects_are_refused(server, make_client):
    server.script(Reply([b""], status=307, headers={"location": "https://evil.example/v1/chat/completions"}))
    with pytest.raises(ArkError) as info:
        await make_client().generate(req())
    assert (info.value.layer, info.value.code, info.value.status_code) == ("security", "provider_redirect_refused",
                                                                          307)
    assert len(server.requests) == 1


async def test_redirects_refused_even_with_a_following_http_client(server, make_client):
    import httpx
    server.script(Reply([b""], status=302, headers={"location": "/elsewhere"}))
    async with httpx.AsyncClient(follow_redirects=True) as http:
        with pytest.raises(ArkError) as info:
            await make_client(http_client=http).generate(req())
    assert info.value.code == "provider_redirect_refused" and len(server.requests) == 1


@pytest.mark.parametrize("profile", [openai, deepseek, zhipu, local])
async def test_unconsumed_extension_fails_before_any_request(server, make_client, profile):
    client = make_client(profile().replace(base_url=server.base_url))
    with pytest.raises(ArkError) as info:
        async for _ in client.stream(req(extensions={"definitely_not_an_option": 1})):
            pass
    assert (info.value.layer, info.value.code) == ("config", "extension_not_supported")
    assert "definitely_not_an_option" in info.value.message
    assert server.requests == []


async def test_with_extensions_lets_one_through(server, make_client):
    server.script(Reply([sse(chunk("a", finish="stop"))]))
    client = make_client(local(server.base_url).with_extensions("mirostat"))
    await client.generate(req(extensions={"mirostat": 2}))
    assert server.requests[0].body["mirostat"] == 2


async def test_extension_cannot_overwrite_core_fields(server, make_client):
    client = make_client(local(server.base_url).with_extensions("messages"))
    with pytest.raises(ArkError) as info:
        await client.generate(req(extensions={"messages": []}))
    assert info.value.layer == "config" and server.requests == []


def test_profiles_declare_their_differences():
    ds, zp, oa, lo = deepseek(), zhipu(), openai(), local()
    assert ds.chat_url == "https://api.deepseek.com/chat/completions"
    assert zp.chat_url == "https://open.bigmodel.cn/api/paas/v4/chat/completions"
    assert oa.chat_url == "https://api.openai.com/v1/chat/completions"
    assert lo.chat_url == "http://localhost:11434/v1/chat/completions"
    assert {"thinking", "reasoning_effort"} <= ds.extensions and not ds.capabilities.images
    assert {"thinking", "tool_stream"} <= zp.extensions and zp.capabilities.images
    assert not zp.capabilities.streaming_tool_calls
    assert lo.think_tags and not lo.requires_api_key
    assert (oa.api_key_env, ds.api_key_env, zp.api_key_env) == ("OPENAI_API_KEY", "DEEPSEEK_API_KEY",
                                                                "ZHIPUAI_API_KEY")


def test_secret_values_for_the_runtime_secret_lint():
    client = OpenAICompatibleClient(local(), api_key=KEY, model="m")
    (value,) = client.secret_values()
    assert isinstance(value, SecretStr) and value.get_secret_value() == KEY and KEY not in repr(value)
