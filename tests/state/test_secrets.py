"""SecretLint: mandatory saves refuse credentials, and never repeat them (DESIGN §8, §9)."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from arknb.domain import AgentMessage, ArkError, ToolCall
from arknb.state import AgentState, SecretLint

from .conftest import make_full_state

API_KEY = "proj-4f8a9c2d1e7b6a5f"
BEARER = "eyJhbGciOiJIUzI1NiJ9.payload.sig"
SK_KEY = "sk-live_ABCDEFGHIJKLMNOPQRST"


def test_finds_a_configured_key():
    lint = SecretLint([API_KEY])
    assert lint.scan(f"the tool printed {API_KEY} by mistake") == ["configured secret #1"]


def test_finds_a_bearer_token():
    assert SecretLint().scan(f"curl -H 'x: Bearer {BEARER}'") == ["bearer token pattern"]


def test_finds_an_sk_key():
    assert SecretLint().scan(f"OPENAI_API_KEY={SK_KEY}") == ["sk- API key pattern"]


@pytest.mark.parametrize("text", [
    "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
    f'{{"headers": {{"Authorization": "Bearer {BEARER}"}}}}',
    f'{{"text": "{{\\"authorization\\": \\"{API_KEY}\\"}}"}}',
])
def test_finds_authorization_headers(text):
    assert SecretLint().scan(text) == ["Authorization header"]


@pytest.mark.parametrize("text", [
    "We discussed the Authorization: header in class.",
    "a bearer of good news",
    "risk-assessment-framework-2024 and task-abcdefghijklmnopqrstuvwxyz",
    "sk-short",
    "",
])
def test_ordinary_text_is_clean(text):
    assert SecretLint(["12345678901"]).scan(text) == []


def test_short_known_strings_are_ignored():
    lint = SecretLint(["abc", ""])
    lint.add("1234567")
    assert lint.scan("abc 1234567") == []


def test_accepts_secret_str_and_numbers_keys_in_order():
    lint = SecretLint(["first-secret-value"])
    lint.add(SecretStr("second-secret-value"))
    lint.add("first-secret-value")  # already known: no new number
    assert lint.scan("second-secret-value") == ["configured secret #2"]


def test_finds_a_key_with_characters_json_escapes():
    key = 'quote"and\\slash-key'
    lint = SecretLint([key])
    state = AgentState(session_id="s", history=(AgentMessage.user(f"key={key}"),))
    with pytest.raises(ArkError):
        lint.check(state)


def test_check_accepts_a_clean_state(full_state):
    SecretLint([API_KEY]).check(full_state)


def test_check_error_names_findings_and_places_but_not_secrets():
    state = make_full_state(
        history=(AgentMessage.user("hello"),
                 AgentMessage.assistant("", tool_calls=[ToolCall(
                     id="c1", name="http", arguments_json=f'{{"auth": "Bearer {BEARER}"}}')]),
                 AgentMessage.tool("c1", f"echo {API_KEY}")),
        metadata={"env": SK_KEY})
    with pytest.raises(ArkError) as info:
        SecretLint([API_KEY]).check(state)
    error = info.value
    assert error.code == "secret_in_state" and error.layer == "security"
    for secret in (API_KEY, BEARER, SK_KEY, "proj-4f8a", "eyJhbGci", "sk-live"):
        assert secret not in error.message and secret not in str(error) and secret not in repr(error)
    assert "bearer token pattern in history[1]" in error.message
    assert "configured secret #1 in history[2]" in error.message
    assert "sk- API key pattern in metadata" in error.message
    assert "'demo'" in error.message


def test_check_finds_secrets_in_a_pending_approval():
    state = make_full_state()
    call = ToolCall(id="c1", name="deploy", arguments_json=f'{{"key": "{SK_KEY}"}}')
    item = state.pending_approval.items[0].model_copy(update={"tool_call": call})
    state = state.model_copy(update={"pending_approval": state.pending_approval.with_item(item)})
    with pytest.raises(ArkError) as info:
        SecretLint().check(state)
    assert "sk- API key pattern in pending_approval" in info.value.message


def test_repr_does_not_show_known_secrets():
    assert API_KEY not in repr(SecretLint([API_KEY]))
