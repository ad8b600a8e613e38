"""PendingApprovalItem / PendingApprovalBatch / ApprovalDecisionResult (seed 000 §8.2, §8.3)."""

from __future__ import annotations

import pydantic
import pytest

from arknb.domain import ArkError, ErrorInfo
from arknb.state import (
    ApprovalDecision, ApprovalDecisionResult, DeniedCall, PendingApprovalBatch, PendingApprovalItem,
)

from .conftest import make_batch, make_item


def test_empty_batch_is_never_all_decided():
    batch = make_batch().model_copy(update={"items": ()})
    assert batch.all_decided() is False


def test_batch_is_all_decided_only_when_no_item_is_pending():
    batch = make_batch(make_item("a1", "c1"), make_item("a2", "c2"))
    assert not batch.all_decided()
    batch = batch.with_item(batch.find("a1").decide("approved", at=1.0))
    assert not batch.all_decided()
    assert [item.approval_id for item in batch.pending_items()] == ["a2"]
    batch = batch.with_item(batch.find("a2").decide(ApprovalDecision.DENIED, reason="no", at=2.0))
    assert batch.all_decided()
    assert batch.pending_items() == []


def test_decide_returns_a_copy_and_leaves_the_original_pending():
    item = make_item()
    approved = item.decide("approved", reason="ignored for approvals", at=5.0)
    assert item.is_pending() and item.decided_at is None
    assert approved.decision == "approved" and approved.decided_at == 5.0
    assert approved.deny_reason is None


def test_decide_denied_keeps_the_reason():
    denied = make_item().decide("denied", reason="too risky", at=6.0)
    assert denied.decision is ApprovalDecision.DENIED
    assert denied.deny_reason == "too risky"
    assert not denied.is_pending()


def test_decide_twice_keeps_the_first_decision():
    approved = make_item().decide("approved", at=5.0)
    assert approved.decide("denied", reason="late", at=9.0) is approved


@pytest.mark.parametrize("bad", ["pending", "maybe", ApprovalDecision.PENDING])
def test_decide_refuses_pending_and_unknown_decisions(bad):
    with pytest.raises(ArkError) as info:
        make_item().decide(bad, at=1.0)
    assert info.value.code == "invalid_argument" and info.value.layer == "config"


def test_items_are_immutable():
    item = make_item()
    with pytest.raises(pydantic.ValidationError):
        item.decision = ApprovalDecision.APPROVED  # type: ignore[misc]
    batch = make_batch()
    with pytest.raises(pydantic.ValidationError):
        batch.items = ()  # type: ignore[misc]
    assert isinstance(batch.items, tuple)


def test_mutating_a_list_you_got_does_not_change_the_batch():
    batch = make_batch()
    pending = batch.pending_items()
    pending.clear()
    pending.append(make_item("intruder", "cX"))
    assert [item.approval_id for item in batch.pending_items()] == ["a1", "a2"]
    assert batch.find("intruder") is None


def test_batch_built_from_a_list_does_not_follow_that_list():
    items = [make_item("a1", "c1")]
    batch = make_batch(*items).model_copy()
    built = PendingApprovalBatch(batch_id="b", run_id="r", items=items,
                                 model_message=batch.model_message, created_at=0.0)
    items.append(make_item("a2", "c2"))
    assert len(built.items) == 1


def test_with_item_replaces_only_the_matching_item():
    batch = make_batch()
    updated = batch.with_item(batch.find("a2").decide("approved", at=3.0))
    assert batch.find("a2").is_pending()
    assert updated.find("a2").decision == "approved"
    assert updated.find("a1") is batch.find("a1")
    assert updated.allowed_calls == batch.allowed_calls and updated.denied_calls == batch.denied_calls


def test_with_item_of_an_unknown_id_is_approval_not_found():
    with pytest.raises(ArkError) as info:
        make_batch().with_item(make_item("nope", "c7"))
    assert info.value.code == "approval_not_found"


def test_find_unknown_id_returns_none():
    assert make_batch().find("missing") is None


def test_duplicate_approval_ids_are_refused():
    with pytest.raises(pydantic.ValidationError):
        make_batch(make_item("a1", "c1"), make_item("a1", "c2"))


def test_batch_holds_only_data():
    batch = make_batch()
    fields = set(PendingApprovalBatch.model_fields) | set(PendingApprovalItem.model_fields) \
        | set(DeniedCall.model_fields)
    assert not any(word in name for name in fields
                   for word in ("callback", "executor", "secret", "token", "client"))
    assert PendingApprovalBatch.model_validate_json(batch.model_dump_json()) == batch


def test_decision_result_success():
    result = ApprovalDecisionResult.success("a1", ApprovalDecision.APPROVED, all_decided=True)
    assert result.ok and result.decision == "approved" and result.all_decided and result.error is None


def test_decision_result_failure_carries_the_error():
    error = ArkError("runtime", "approval_not_found", "no approval 'zz'")
    result = ApprovalDecisionResult.failure("zz", error)
    assert not result.ok and result.decision == "error" and not result.all_decided
    assert isinstance(result.error, ErrorInfo) and result.error.code == "approval_not_found"
    assert ApprovalDecisionResult.model_validate_json(result.model_dump_json()) == result
