"""trusted_builder: a positional constructor for frozen slotted dataclasses."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from arknb.domain.trusted import trusted_builder
from arknb.events import AgentEvent
from arknb.events.envelope import new_event
from arknb.hooks import ModelChunkHookContext, ModelChunkHookResult
from arknb.hooks.contexts import new_chunk_context


@dataclass(frozen=True, slots=True)
class _Base:
    a: int
    b: str = "b"


@dataclass(frozen=True, slots=True)
class _Child(_Base):
    c: list = field(default_factory=list)


def test_builds_an_object_equal_to_the_constructors_with_inherited_fields_first():
    built = trusted_builder(_Child)(1, "x", [2])
    assert built == _Child(1, "x", [2])
    assert type(built) is _Child


def test_built_objects_stay_frozen():
    built = trusted_builder(_Base)(1, "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.a = 2  # type: ignore[misc]


def test_every_field_is_required():
    with pytest.raises(TypeError):
        trusted_builder(_Base)(1)


@pytest.mark.parametrize("cls", [int, dataclass(frozen=True)(type("Plain", (), {"__annotations__": {"x": int}}))])
def test_refuses_what_is_not_a_slotted_dataclass(cls):
    with pytest.raises(TypeError, match="slotted dataclass"):
        trusted_builder(cls)


def test_the_runtimes_builders_match_their_constructors():
    assert new_event("r:3", "llm.chunk", "s", "r", 3, 1.5, {"text": "hi"}, None, None) == AgentEvent(
        type="llm.chunk", session_id="s", run_id="r", sequence=3, timestamp=1.5,
        payload={"text": "hi"}, event_id="r:3")
    assert new_chunk_context("s", "r", None, "t", "", 4, True, 2) == ModelChunkHookContext(
        session_id="s", run_id="r", state=None, text="t", reasoning="", index=4, final=True, turn=2)
    assert ModelChunkHookResult._trusted_proceed("t", "") == ModelChunkHookResult.proceed("t", "")
