"""Secrets never reach saved state or events (DESIGN §8, §9; issue 3 items 10-11).

Mandatory saves run a secret lint that refuses credential-shaped values (configured
secrets, the model's own key, bearer tokens) with a ``security`` error; and a full
session with approvals and file persistence leaves the provider key nowhere on disk
and in no event payload.
"""

from __future__ import annotations

import json

import arknb as ark
from arknb import EventTypes, ScriptedTurn

from ._approval_kit import EventLog, FaultyStorage, call

API_KEY = "sk-arknb-test-0123456789abcdefXYZ"
CONFIGURED = "corp-internal-token-5f3a9c"


class KeyedModel(ark.ScriptedModel):
    """A provider-like scripted model: it holds an API key and says so through secret_values()."""

    def __init__(self, turns, api_key: str) -> None:
        super().__init__(turns)
        self._api_key = api_key

    def secret_values(self):
        return [self._api_key]

    def __repr__(self) -> str:
        return "KeyedModel(api_key=***)"


def leaking_tool(text: str):
    @ark.tool
    def lookup(query: str) -> str:
        """Look something up."""
        return text

    return lookup


async def _run_leak(text: str, **options):
    storage = FaultyStorage()
    runtime = ark.AgentRuntime(options.pop("model", None) or ark.ScriptedModel(
        [ScriptedTurn(tool_calls=[call("c1", "lookup", query="x")]), "ok"]),
        tools=[leaking_tool(text)], storage=storage, **options)
    log = EventLog(runtime)
    return runtime, storage, log, await runtime.run("look it up")


def _assert_refused(result, log, secret_hint: str):
    assert not result.persisted and not result.resumable
    assert result.error.code == "secret_in_state" and result.error.layer == "security"
    assert secret_hint not in result.error.message  # it says what and where, never the value
    assert "history[" in result.error.message
    refused = [p for p in log.persisted() if not p["ok"]]
    assert refused and refused[-1]["mandatory"] and refused[-1]["error"]["code"] == "secret_in_state"


async def test_mandatory_save_refuses_configured_secret():
    runtime, storage, log, result = await _run_leak(f"the token is {CONFIGURED}", secrets=[CONFIGURED])

    assert result.stop_reason == "completed"
    _assert_refused(result, log, CONFIGURED)
    assert storage.marked == [runtime.session_id]  # a refused terminal save is a failed one
    assert "configured secret" in result.error.message


async def test_mandatory_save_refuses_bearer_token():
    token = "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345"
    runtime, storage, log, result = await _run_leak(f"request headers: {token}")

    _assert_refused(result, log, "abcdefghijklmnopqrstuvwxyz012345")
    assert "Authorization header" in result.error.message or "bearer" in result.error.message


async def test_model_secret_values_are_linted():
    model = KeyedModel([ScriptedTurn(tool_calls=[call("c1", "lookup", query="x")]), "ok"], API_KEY)
    runtime, storage, log, result = await _run_leak(f"key={API_KEY}", model=model)

    _assert_refused(result, log, API_KEY)


async def test_secret_in_awaiting_approval_save_fails_the_run_instead_of_waiting():
    @ark.tool(risk="dangerous")
    def deploy(target: str) -> str:
        """Deploy."""
        return "deployed"

    storage = FaultyStorage()
    model = ark.ScriptedModel([ScriptedTurn(text=f"using {CONFIGURED}", tool_calls=[call("c1", "deploy", target="prod")])])
    runtime = ark.AgentRuntime(model, tools=[deploy], storage=storage, secrets=[CONFIGURED])
    log = EventLog(runtime)

    result = await runtime.run("deploy")

    assert result.stop_reason == "failed" and result.error.code == "secret_in_state"
    assert result.error.layer == "security" and CONFIGURED not in result.error.message
    assert not log.of(EventTypes.APPROVAL_REQUIRED) and runtime.state.pending_approval is None
    assert runtime.state.not_resumable


async def test_api_key_never_reaches_saved_files_or_events(tmp_path):
    """A full session (approval, deny, approve, restore, completion) with FileStateStorage:
    the provider key appears in no saved file and no published event payload."""
    seen_keys = []

    @ark.tool
    def fetch(url: str) -> str:
        """Fetch with the provider's credentials (uses the key, never returns it)."""
        seen_keys.append(API_KEY)
        return f"200 OK from {url}"

    @ark.tool(risk="dangerous")
    def purge(path: str) -> str:
        """Purge a folder."""
        return f"purged {path}"

    turns = [
        ScriptedTurn(text="Fetching.", tool_calls=[call("c1", "fetch", url="https://example.org")]),
        ScriptedTurn(text="Now purging.", tool_calls=[call("c2", "purge", path="/a"),
                                                      call("c3", "purge", 1, path="/b")]),
    ]
    storage = ark.FileStateStorage(tmp_path)
    runtime = ark.AgentRuntime(KeyedModel(turns, API_KEY), tools=[fetch, purge], storage=storage,
                               session_id="keyed", system_prompt="Be careful.")
    events = []
    runtime.bus.subscribe(EventTypes.ANY, events.append)

    first = await runtime.run("fetch and purge")
    assert first.stop_reason == "awaiting_approval"

    # A kernel restart: a new runtime with a new model object holding the same key.
    restored = await ark.AgentRuntime.restore("keyed", storage=storage,
                                              model=KeyedModel(["All done."], API_KEY), tools=[fetch, purge])
    restored.bus.subscribe(EventTypes.ANY, events.append)
    a, b = restored.controller.list_pending_approvals()
    await restored.controller.deny(a.approval_id, "keep /a")
    await restored.controller.approve(b.approval_id)
    final = await restored.current_run
    assert final.stop_reason == "completed" and final.persisted and seen_keys

    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert API_KEY not in path.read_text(errors="replace"), f"key found in {path.name}"
    kinds = {e.type for e in events}
    assert {EventTypes.APPROVAL_REQUIRED, EventTypes.APPROVAL_RESOLVED, EventTypes.STATE_PERSISTED,
            EventTypes.AGENT_SUCCESS} <= kinds
    for event in events:
        assert API_KEY not in json.dumps(event.to_dict(), default=str), f"key found in {event.type}"
    for text in (repr(runtime), repr(restored), repr(restored.state), str(final), repr(runtime.secret_lint)):
        assert API_KEY not in text


async def test_secret_never_reaches_storage_through_an_autosave(tmp_path):
    """The after_tool_batch autosave would otherwise write the credential that the terminal
    save then refuses, leaving it on disk."""
    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "lookup", query="x")]), "ok"]),
                               tools=[leaking_tool(f"token {CONFIGURED}")], storage=ark.FileStateStorage(tmp_path),
                               secrets=[CONFIGURED])
    log = EventLog(runtime)

    result = await runtime.run("go")

    assert result.error.code == "secret_in_state" and not result.persisted
    refused = [p for p in log.persisted() if not p["ok"]]
    assert refused[0]["reason"] == "after_tool_batch" and refused[0]["mandatory"] is False
    for path in tmp_path.iterdir():
        assert CONFIGURED not in path.read_text()
    assert (await ark.FileStateStorage(tmp_path).load(runtime.session_id)).not_resumable
