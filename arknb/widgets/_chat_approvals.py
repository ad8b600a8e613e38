"""The chat's approval cards: what the controller says, plus what this chat learnt.

A card is live (its buttons work) only while the runtime's controller lists its item
as pending, no decision for it is in flight, and the chat is attached. Before acting
the chat re-reads the controller (:meth:`ApprovalCards.check`); a decision the
runtime reports as made elsewhere (``approval_already_resolved``, with the recorded
decision) or refused because another runtime changed the session (``state_conflict``)
turns the card into that decision, never into a second chance to run the call.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..domain import ErrorCode
from ._payload import call_fields, error_text
from ._transcript import Transcript

__all__ = ["ApprovalCards", "approval_dict"]

_DECISIONS = frozenset({"approved", "denied"})


class ApprovalCards:
    """The ``approvals`` trait's items and the per-card state behind them.

    Args:
        runtime: the chat's runtime (``None`` for a read-only replay: the cards come
            from the replayed events and have no buttons).
        transcript: the chat's transcript (decisions learnt here are folded into it).
    """

    def __init__(self, runtime: Any, transcript: Transcript) -> None:
        self.runtime = runtime
        self.transcript = transcript
        self.dirty = True
        """True when :meth:`items` would give something new."""
        self._ui: dict[str, dict[str, Any]] = {}
        self._batch_ids: dict[str, str | None] = {}

    # -- reading ------------------------------------------------------------------------

    def _batch(self) -> list[dict[str, Any]]:
        if self.runtime is None:
            return [dict(a) for a in self.transcript.approvals.values() if a["decision"] == "pending"]
        controller = self.runtime.controller
        whole = getattr(controller, "pending_batch", None)
        if callable(whole):
            batch = whole()
            if batch is None:
                return []
            batch_id = str(batch.batch_id)
            # Each card shows its item's kind: an "in_doubt" card offers rerun / done / failed
            # (DESIGN §13; every item of an in-doubt batch is one), a "plan" card a plan review.
            extra = {"kind": "in_doubt"} if str(getattr(batch, "kind", "tool")) == "in_doubt" else {}
            rows = [{**approval_dict(item), "batch_id": batch_id, **extra}
                    for item in batch.items if not item.is_pending()]
            # The pending ones as the controller lists them: an item that stands for a
            # sub-agent's approvals is listed as those ("{agent}/{approval_id}"), decided by id.
            own = {item.approval_id for item in batch.items}
            for item in _approvals_of(controller):
                row = approval_dict(item)
                rows.append({**row, "batch_id": batch_id if row["approval_id"] in own else None, **extra})
            return rows
        # A controller without the whole batch: only its pending items.
        return [a for a in map(approval_dict, _approvals_of(controller)) if a["decision"] == "pending"]

    def items(self, *, detached: bool) -> list[dict[str, Any]]:
        """One dict per item of the pending batch, with ``decision`` (as recorded, also
        when it was made elsewhere), ``deciding``, ``error``, ``note`` and ``live``."""
        self.dirty = False
        from ._chat_elicitation import elicitation_rows  # a server's questions (DESIGN §15)
        items = self._batch() + elicitation_rows(self.runtime)
        self._batch_ids = {a["approval_id"]: a.get("batch_id") for a in items}
        current = {a["approval_id"] for a in items}
        self._ui = {k: v for k, v in self._ui.items() if k in current}
        out = []
        for a in items:
            ui = self._ui.get(a["approval_id"], {})
            decision = ui.get("recorded") or a["decision"]
            deciding = bool(ui.get("deciding"))
            out.append({**a, "decision": decision, "deciding": deciding, "error": ui.get("error"),
                        "note": ui.get("note"),
                        "live": (decision == "pending" and not deciding and not detached and not ui.get("stale")
                                 and self.runtime is not None)})
        return out

    def pending(self) -> bool:
        """True while some item of the batch waits for a decision."""
        return any(a["decision"] == "pending" and not self._ui.get(a["approval_id"], {}).get("recorded")
                   for a in self._batch())

    def pending_kind(self, kind: str) -> bool:
        """True while an item of ``kind`` (``"plan"``: a plan review) waits for a decision."""
        return any(a["decision"] == "pending" and a.get("kind") == kind
                   and not self._ui.get(a["approval_id"], {}).get("recorded") for a in self._batch())

    def recorded(self, approval_id: str) -> str | None:
        """The decision this chat knows for ``approval_id`` (None while pending or unknown)."""
        decision = self._ui.get(approval_id, {}).get("recorded")
        if decision:
            return decision
        known = self.transcript.approvals.get(approval_id)
        return known["decision"] if known is not None and known["decision"] in _DECISIONS else None

    def check(self, approval_id: str) -> str | None:
        """Why ``approval_id`` cannot be decided from this chat now, or None if it can."""
        ui = self._ui.get(approval_id, {})
        if ui.get("deciding"):
            return f"a decision for {approval_id} is already being saved"
        if ui.get("stale"):
            return ui.get("error") or "another runtime changed this session"
        item = next((a for a in self._batch() if a["approval_id"] == approval_id), None)
        if item is None:
            self.dirty = True
            decision = self.recorded(approval_id)
            if decision:
                return f"approval_already_resolved: {approval_id} was already {decision}"
            return f"approval_not_found: {approval_id} is not pending on this runtime (its batch was resolved)"
        decision = ui.get("recorded") or (item["decision"] if item["decision"] in _DECISIONS else None)
        if decision:
            self._record(approval_id, decision, ui.get("note"))
            return f"approval_already_resolved: {approval_id} was already {decision}"
        return None

    # -- deciding ------------------------------------------------------------------------

    def deciding(self, approval_id: str) -> None:
        """The click went out: no second click until the runtime answers."""
        self._ui[approval_id] = {"deciding": True}
        self.dirty = True

    async def decide(self, approve: bool, approval_id: str, reason: str | None) -> tuple[bool, str | None]:
        """Ask the controller; returns ``(ok, error text)`` and updates the card."""
        controller = self.runtime.controller
        # The card's batch goes along, so a card can never decide an item of another batch.
        batch_id = self._batch_ids.get(approval_id)
        scope = {"batch_id": batch_id} if batch_id and _takes_batch_id(controller) else {}
        result = await (controller.approve(approval_id, **scope) if approve
                        else controller.deny(approval_id, reason, **scope))
        self.dirty = True
        if bool(getattr(result, "ok", True)):
            decision = _value(getattr(result, "decision", None)) or ("approved" if approve else "denied")
            self._record(approval_id, decision, None)
            return True, None
        error = getattr(result, "error", None)
        code = _value(getattr(error, "code", None))
        text = error_text(error) or "the runtime refused the decision"
        recorded = _value(getattr(result, "decision", None))
        if code == ErrorCode.APPROVAL_ALREADY_RESOLVED and recorded in _DECISIONS:
            self._record(approval_id, recorded, f"already {recorded} elsewhere")
        elif code == ErrorCode.STATE_CONFLICT:
            # Another runtime decided or moved the saved session on: this card must not offer
            # the call again (issue 10: never a second run of a dangerous tool).
            self._ui[approval_id] = {"error": text, "note": "another runtime changed this session: nothing ran",
                                     "recorded": recorded if recorded in _DECISIONS else None, "stale": True}
        else:
            self._ui[approval_id] = {"error": text}
        return False, text

    async def resolve(self, resolution: str, approval_id: str, text: str | None) -> tuple[bool, str | None]:
        """A person's decision on an in-doubt card (``rerun``, ``mark_done``, ``mark_failed``):
        ask the controller; returns ``(ok, error text)`` and updates the card."""
        controller = self.runtime.controller
        if resolution == "rerun":
            result = await controller.rerun(approval_id)
        elif resolution == "mark_done":
            result = await controller.mark_done(approval_id, text or "")
        else:
            result = await controller.mark_failed(approval_id, text or "marked failed in the chat")
        self.dirty = True
        if bool(getattr(result, "ok", True)):
            self._record(approval_id, _value(getattr(result, "decision", None)) or resolution, None)
            return True, None
        error_message = error_text(getattr(result, "error", None)) or "the runtime refused the decision"
        self._ui[approval_id] = {"error": error_message}
        return False, error_message

    def failed(self, approval_id: str, exc: BaseException) -> tuple[bool, str]:
        """The controller raised: the card is live again and shows why."""
        text = error_text(exc)
        self._ui[approval_id] = {"error": text}
        self.dirty = True
        return False, text

    def _record(self, approval_id: str, decision: str, note: str | None) -> None:
        self._ui[approval_id] = {"recorded": decision, "note": note}
        self.transcript.decided(approval_id, decision)
        self.dirty = True


def approval_dict(item: Any) -> dict[str, Any]:
    """A pending approval item (model or dict) as the plain dict a card shows."""
    data = item if isinstance(item, dict) else item.model_dump(mode="json")
    call = call_fields(data.get("tool_call"))
    return {"approval_id": str(data.get("approval_id")), "call_id": call["id"], "tool_name": call["name"],
            "arguments": call["arguments"], "risk_level": str(data.get("risk_level") or ""),
            "reason": str(data.get("reason") or ""), "decision": _value(data.get("decision")) or "pending",
            "deny_reason": data.get("deny_reason"), "kind": str(data.get("kind") or "tool"),
            "detail": dict(data.get("detail") or {})}


def _takes_batch_id(controller: Any) -> bool:
    try:
        return "batch_id" in inspect.signature(controller.approve).parameters
    except (TypeError, ValueError):
        return False


def _value(value: Any) -> str | None:
    """An enum's value or a string (``None`` stays ``None``)."""
    if value is None:
        return None
    return str(getattr(value, "value", value))


def _approvals_of(controller: Any) -> list[Any]:
    """The controller's pending items but its elicitations (they get cards of their own)."""
    return [item for item in controller.list_pending_approvals() if getattr(item, "kind", None) != "elicitation"]
