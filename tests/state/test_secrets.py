"""SecretLint: mandatory saves refuse credentials, and never repeat them (DESIGN §8, §9)."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr

from arknb.domain import AgentMessage, ArkError, ContentPart, ToolCall
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


# -- redaction (issue 10 item 5: redact instead of refusing every later save) -----------

from arknb.state import REDACTED, Redaction  # noqa: E402


def test_redact_text_replaces_values_and_keeps_header_names():
    lint = SecretLint([API_KEY])
    text, hits = lint.redact_text(f"Authorization: Bearer {BEARER} then {API_KEY} and {SK_KEY}")
    assert text == f"Authorization: Bearer {REDACTED} then {REDACTED} and {REDACTED}"
    assert sorted(hits) == ["Authorization header", "configured secret #1", "sk- API key pattern"]


def test_redact_text_returns_clean_text_as_the_same_object():
    text = "nothing to see here, just a long enough sentence"
    assert SecretLint([API_KEY]).redact_text(text) == (text, [])
    assert SecretLint([API_KEY]).redact_text(text)[0] is text


def test_a_longer_known_secret_is_replaced_whole():
    lint = SecretLint(["abcdefgh", "abcdefgh-rotated"])
    assert lint.redact_text("k=abcdefgh-rotated")[0] == f"k={REDACTED}"


def test_patterns_can_be_left_out():
    lint = SecretLint([API_KEY])
    text, hits = lint.redact_text(f"{SK_KEY} {API_KEY}", patterns=False)
    assert text == f"{SK_KEY} {REDACTED}" and hits == ["configured secret #1"]
    assert SecretLint().redact({"a": SK_KEY}, patterns=False) == ({"a": SK_KEY}, [])


def test_redact_walks_models_mappings_and_sequences_and_keeps_clean_parts_identical():
    clean = AgentMessage.user("hello there")
    value = {"messages": [clean, AgentMessage.user(f"key {API_KEY}")], "n": 3, API_KEY: (1, "x")}
    redacted, hits = SecretLint([API_KEY]).redact(value)
    assert redacted["messages"][0] is clean
    assert redacted["messages"][1].text == f"key {REDACTED}" and redacted[REDACTED] == (1, "x")
    assert hits == ["configured secret #1", "configured secret #1"]
    assert value["messages"][1].text == f"key {API_KEY}"   # the original is not changed


@pytest.mark.parametrize("name", ["Authorization", "X-Authorization", "proxy-authorization", "x-api-key", "api_key"])
def test_a_credential_header_entry_is_redacted_whole(name):
    redacted, hits = SecretLint().redact({"headers": {name: "Token abcdefghijklmnopqrstuvwx"}})
    assert redacted == {"headers": {name: REDACTED}} and hits == ["Authorization header"]


def test_an_ordinary_header_entry_is_kept():
    value = {"authorization": "granted by the admin"}
    assert SecretLint().redact(value) == (value, [])


def test_redact_finds_a_key_with_characters_that_need_escaping():
    key = 'quote"and\\slash-key'
    redacted, hits = SecretLint([key]).redact({"text": f"key={key}"})
    assert redacted == {"text": f"key={REDACTED}"} and hits == ["configured secret #1"]


def test_redact_state_redacts_history_and_fields_and_says_where(full_state):
    state = full_state.model_copy(update={
        "history": full_state.history + (AgentMessage.tool("c9", f"echo {API_KEY}"),),
        "metadata": {"env": SK_KEY}})
    lint = SecretLint([API_KEY])
    redacted, redactions = lint.redact_state(state, history_from=len(full_state.history))
    index = len(full_state.history)
    assert redactions == [Redaction(f"history[{index}]", 1, ("configured secret #1",)),
                          Redaction("metadata", 1, ("sk- API key pattern",))]
    assert redacted.history[index].text == f"echo {REDACTED}" and redacted.metadata == {"env": REDACTED}
    assert redacted.history[:index] == full_state.history
    lint.check(redacted)   # nothing left
    assert redactions[0].to_payload() == {"where": f"history[{index}]", "count": 1,
                                          "kinds": ["configured secret #1"]}


def test_redact_state_of_a_clean_state_returns_it(full_state):
    assert SecretLint([API_KEY]).redact_state(full_state) == (full_state, [])
    assert SecretLint([API_KEY]).redact_state(full_state)[0] is full_state


def test_redact_state_refuses_only_what_no_single_string_holds():
    # The known "secret" spans two JSON strings: it cannot be redacted, so the save is refused.
    lint = SecretLint(['ab","cd12345'])
    state = AgentState(session_id="s", metadata={"x": ["ab", "cd12345"]})
    with pytest.raises(ArkError) as info:
        lint.redact_state(state)
    assert info.value.code == "secret_in_state" and "cd12345" not in info.value.message


def test_a_value_nested_deeper_than_any_arknb_builds_is_redacted_whole():
    value: object = f"key {API_KEY}"
    for _ in range(100):
        value = [value]
    redacted, hits = SecretLint([API_KEY]).redact(value)
    assert API_KEY not in repr(redacted) and hits


# -- the save-time check finds nothing the redaction left (no save refused for good) ----


@pytest.mark.parametrize("text", [
    "authorization:\x00abcdefghijklmnopqrstu",          # JSON writes \u0000: not the start of a token
    'Authorization="\x0cauthorizationABCDEFGHIJKLMNOP0123',
    "AUTHORIZATION:\x00a-b_c.d~e+f/g=h\x0b\r\\",
])
def test_a_control_character_after_a_credential_name_does_not_refuse_the_save(text):
    state = AgentState(session_id="s", history=(AgentMessage.user("hi"), AgentMessage.tool("c1", text)),
                       metadata={"headers": {"Authorization": "\r" + text[-21:]}})
    lint = SecretLint()
    redacted, _ = lint.redact_state(state)
    lint.check(redacted)   # what is saved scans clean: later saves are not refused either


def test_redaction_searches_again_what_a_first_redaction_exposed():
    # The first long word is taken for the scheme, the second for the token.
    text = "Authorization:abcdefghijklmnopqrstu\xa0AuthorizationBearer'x-api-key"
    redacted, hits = SecretLint().redact_text(text)
    assert "abcdefghijklmnopqrstu" not in redacted and len(hits) == 2
    assert SecretLint().scan(redacted) == []


@pytest.mark.parametrize("entry", [
    {"Authorization": "abcdefghijklmnopqrstu and more words"},
    {"authorization'": "abcdefghijklmnopqrstuvwx"},
])
def test_a_header_entry_whose_value_starts_like_a_token_is_redacted_whole(entry):
    state = AgentState(session_id="s", metadata={"headers": entry})
    lint = SecretLint()
    redacted, redactions = lint.redact_state(state)
    assert list(redacted.metadata["headers"].values()) == [REDACTED]
    assert [r.where for r in redactions] == ["metadata"]
    lint.check(redacted)


# -- issue 26: escaped, split and shaped forms --------------------------------------------

KNOWN = "known-key/0123456789-ABCdef"


def _escape_at(value: str, index: int) -> str:
    return value[:index] + "\\u%04x" % ord(value[index]) + value[index + 1:]


@pytest.mark.parametrize("index", range(len(KNOWN)))
def test_a_known_secret_with_any_one_character_json_escaped_is_redacted(index):
    text = '{"token": "%s", "other": 1}' % _escape_at(KNOWN, index)
    redacted, hits = SecretLint([KNOWN]).redact_text(text)
    assert redacted == '{"token": "[redacted]", "other": 1}' and hits == ["configured secret #1"]


@pytest.mark.parametrize("text", [
    '"%s"' % KNOWN.replace("/", "\\/"),                                   # JSON's optional \/
    json.dumps(json.dumps({"t": _escape_at(KNOWN, 3)})),                   # JSON in JSON: \\u0077
    '"%s"' % "".join("\\u%04x" % ord(c) for c in KNOWN),                  # every character escaped
    "'%s'" % KNOWN.replace("k", "\\x6b"),                                 # a Python repr's \x escapes
])
def test_escaped_forms_at_any_depth_are_found_and_redacted(text):
    lint = SecretLint([KNOWN])
    assert lint.scan(text) == ["configured secret #1"]
    redacted, hits = lint.redact_text(text)
    assert hits and "[redacted]" in redacted and "\\u" not in redacted.replace("\\\\u", "")


def test_an_escaped_astral_character_written_as_a_surrogate_pair_is_decoded():
    key = "emoji-\U0001F511-key-0123456789"
    text = json.dumps({"k": key})  # ensure_ascii: the key is written \ud83d\udd11
    assert key not in text
    assert SecretLint([key]).redact_text(text) == ('{"k": "[redacted]"}', ["configured secret #1"])


def test_redacting_an_escaped_secret_keeps_the_json_valid():
    call = ToolCall(id="c", name="t", arguments_json='{"a": "x %s y", "b": "%s"}' % (
        _escape_at(KNOWN, 0), _escape_at(KNOWN, len(KNOWN) - 1)))
    redacted, hits = SecretLint([KNOWN]).redact(call)
    assert len(hits) == 2 and redacted.arguments == {"a": "x [redacted] y", "b": "[redacted]"}


def test_a_secret_split_across_list_items_and_text_parts_is_cut_out_of_each():
    lint = SecretLint([KNOWN])
    assert lint.redact(["a " + KNOWN[:7], KNOWN[7:15], KNOWN[15:] + " b"]) == (
        ["a [redacted]", "", " b"], ["configured secret split across strings"])
    message = AgentMessage.model_construct(role=AgentMessage.user("x").role, contents=(
        ContentPart.from_text("see " + KNOWN[:10]), ContentPart.from_text(KNOWN[10:])), tool_calls=(),
        tool_call_id=None, reasoning=(), is_error=False)
    redacted, hits = lint.redact(message)
    assert [p.text for p in redacted.contents] == ["see [redacted]", ""] and hits


def test_a_secret_split_across_adjacent_json_strings_in_one_text_is_redacted():
    text = json.dumps({"parts": ["first " + KNOWN[:9], KNOWN[9:] + " last"]})
    redacted, hits = SecretLint([KNOWN]).redact_text(text)
    assert json.loads(redacted) == {"parts": ["first [redacted] last"]} and hits
    assert SecretLint([KNOWN]).scan(text) == ["configured secret split across strings"]


def test_strings_that_only_share_a_part_of_a_secret_are_left_alone():
    value = ["known-key/0123", "unrelated"]
    assert SecretLint([KNOWN]).redact(value) == (value, [])


@pytest.mark.parametrize("key", [
    "sk-proj-Q7xL2mN9pR4tV8wZ1bC5dF3gH6jK0",         # OpenAI project key
    "sk-0123456789abcdef0123456789abcdef",          # DeepSeek: hex
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx",        # Anthropic
    "sk-live_ABCDEFGHIJKLMNOPQRST",
])
def test_generated_looking_sk_keys_are_credentials(key):
    assert SecretLint().redact_text(f"key={key} end") == ("key=[redacted] end", ["sk- API key pattern"])


@pytest.mark.parametrize("text", [
    "use sk-learn-style-estimators-everywhere",
    "the sk-classic-tutorial-notebook-series",
    "a bearer authentication-for-everyone-everywhere",
])
def test_prose_that_starts_like_a_credential_is_not_one(text):
    assert SecretLint().scan(text) == [] and SecretLint().redact_text(text) == (text, [])


def test_a_shape_written_with_escapes_is_redacted():
    text = '{"v": "s\\u006b-proj-Q7xL2mN9pR4tV8wZ1bC5"}'
    assert SecretLint().redact_text(text) == ('{"v": "[redacted]"}', ["sk- API key pattern"])


def test_capitalised_words_after_sk_are_prose_but_random_case_is_not():
    assert SecretLint().scan("see sk-Learn-Style-Guide-Everywhere") == []
    assert SecretLint().scan("key sk-AbCdEfGhIjKlMnOpQrSt") == ["sk- API key pattern"]
