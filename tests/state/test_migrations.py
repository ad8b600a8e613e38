"""Schema migrations: older documents are lifted, newer ones refused, never half-read."""

from __future__ import annotations

import json

import pytest

from arknb.domain import AgentMessage, ArkError, Usage
from arknb.state import MIGRATIONS, SCHEMA_VERSION, AgentState, migrate

V1_DOCUMENT = {
    "schema_version": 1,
    "session_id": "old",
    "history": [
        {"role": "user", "contents": [{"kind": "text", "text": "What is 1 + 2?"}]},
        {"role": "assistant", "contents": [{"kind": "text", "text": "3"}]},
    ],
    "usage": [{"input_tokens": 4, "output_tokens": 1}],
    "metadata": {"course": "intro"},
    "is_running": False,
    "total_loop_count": 1,
    "current_loop_count": 1,
    "last_error": None,
}


def test_migrations_cover_every_version_up_to_the_current_one():
    assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION))


def test_v1_document_migrates_to_the_current_version():
    state = AgentState.from_json(json.dumps(V1_DOCUMENT), source="old.json")
    assert state.schema_version == SCHEMA_VERSION
    assert state.usages == (Usage(input_tokens=4, output_tokens=1),)
    assert state.history == (AgentMessage.user("What is 1 + 2?"), AgentMessage.assistant("3"))
    assert state.metadata == {"course": "intro"} and state.total_loop_count == 1
    # Fields that v1 did not have take their defaults.
    assert state.pending_approval is None and state.not_resumable is False
    assert state.current_run_id is None and state.event_sequence == 0
    assert state.last_stop_reason is None


def test_v2_document_reads_as_revision_0_without_extension_slices():
    doc = {"schema_version": 2, "session_id": "s", "history": [], "pending_approval": None,
           "event_sequence": 5}
    state = AgentState.from_json(json.dumps(doc), source="v2.json")
    assert state.schema_version == SCHEMA_VERSION and state.event_sequence == 5
    assert state.revision == 0 and state.extensions == {}


def test_document_without_version_is_read_as_v1():
    doc = {k: v for k, v in V1_DOCUMENT.items() if k != "schema_version"}
    state = AgentState.from_json(json.dumps(doc))
    assert state.usages == (Usage(input_tokens=4, output_tokens=1),)


def test_migrate_does_not_modify_its_input():
    doc = dict(V1_DOCUMENT)
    migrate(doc)
    assert doc == V1_DOCUMENT


def test_migrated_state_saves_as_the_current_version():
    state = AgentState.from_json(json.dumps(V1_DOCUMENT))
    assert json.loads(state.to_json())["schema_version"] == SCHEMA_VERSION
    assert "usage" not in json.loads(state.to_json())


def test_v1_with_both_usage_keys_is_corrupt():
    doc = dict(V1_DOCUMENT, usages=[])
    with pytest.raises(ArkError) as info:
        AgentState.from_json(json.dumps(doc), source="both.json")
    assert info.value.code == "state_corrupt" and "both.json" in info.value.message


def test_newer_version_is_refused_before_any_field_is_read():
    # The rest of the document is nonsense: the version check must come first.
    doc = {"schema_version": 99, "session_id": 12, "history": "?"}
    with pytest.raises(ArkError) as info:
        migrate(doc, source="/data/s.json")
    assert info.value.code == "state_version_unsupported"
    assert "99" in info.value.message and "/data/s.json" in info.value.message


@pytest.mark.parametrize("version", [0, -1, "2", 1.5, True, None])
def test_invalid_versions_are_corrupt(version):
    with pytest.raises(ArkError) as info:
        migrate({"schema_version": version, "session_id": "s"})
    assert info.value.code == "state_corrupt"
