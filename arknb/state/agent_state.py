"""The saved state of one agent session.

:class:`AgentState` is frozen. The runtime never edits it in place: it builds the next
state with ``state.model_copy(update=...)``. Its collections are tuples of frozen
values, so a new state shares structure with the old one and a hook can keep the state
it was given as a snapshot at no cost (DESIGN §5).

It never holds clients, tools, hooks, listeners, tokens or secrets: only what is
needed to show and resume a session (DESIGN §8).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import ConfigDict, Field, ValidationError

from arknb.domain import AgentMessage, ArkError, ErrorCode, ErrorInfo, ErrorLayer, Usage
from arknb.domain.frozen import DeepFrozenModel, FrozenJSON

from ._finite import holds_nonfinite, open_positions
from .approvals import PendingApprovalBatch, ResolvedApproval
from .context import ContextSummary, context_summaries_of
from .migrations import SCHEMA_VERSION, migrate
from .plan import Plan, plan_of
from .run_output import SavedOutputType
from .skills import active_skills_of

__all__ = ["SCHEMA_VERSION", "AgentState", "current_document", "parse_document"]


_SNAPSHOT_ORIGIN = ("AgentState.{0} is read-only (the state is a frozen snapshot shared with the runtime): "
                    "return a hook result to change the run; a changed state is built with "
                    "state.model_copy(update={{'{0}': {{...}}}}); .thaw() gives a mutable copy")
_METADATA = FrozenJSON(_SNAPSHOT_ORIGIN.format("metadata"))
_EXTENSIONS = FrozenJSON(_SNAPSHOT_ORIGIN.format("extensions"))


class AgentState(DeepFrozenModel):
    """Everything a session needs to be shown again and resumed.

    Attributes:
        schema_version: format version (see :mod:`arknb.state.migrations`).
        session_id: the session this state belongs to.
        history: the conversation, oldest first.
        usages: token usage of every model call, in order.
        metadata: JSON-ready values owned by the application (never secrets); read-only
            all the way down, like ``extensions``.
        is_running: a resumable run exists; it never means a connection is alive
            (seed 003 §4.3).
        total_loop_count: model turns over the session's life.
        current_loop_count: model turns of the current run.
        last_error: the error that ended the last run, if any.
        pending_approval: the frozen tool batch waiting for decisions (seed 000 §8.2).
        not_resumable: a terminal save failed; this state must not be resumed.
        current_run_id: the run in progress or suspended.
        last_stop_reason: how the last run ended (a ``StopReason`` value).
        event_sequence: the last event sequence number used, so a resumed run continues it.
        loop_window: the loop detector's recent tool-call signatures, so a restored runtime
            keeps counting (an optional field added within schema version 2).
        loop_forgiven: signatures a human approved as intended repetition.
        updated_at: when this state was built (seconds since the epoch).
        revision: the stored revision this state was loaded at or last saved as (0: never
            saved). A save based on a revision that is no longer the stored one fails with
            ``state_conflict`` and changes nothing (DESIGN §8).
        extensions: one JSON-ready slice per runtime extension, keyed by the extension's
            name (DESIGN §14); ``state.plan``, ``state.active_skills`` and
            ``state.context_summaries`` read theirs.
        resolved_approvals: the decisions of the most recently resolved batches (the last
            ``RESOLVED_APPROVALS_KEPT``), so a decision repeated after its batch resolved
            gets ``approval_already_resolved`` with the decision that stands (an optional
            field added within schema version 3).
        run_output: the typed answer the current run asks for (DESIGN §17), so a paused
            run restored in a new process asks for the same type (None: plain text; an
            optional field, left out of the JSON when None).

    Example:
        >>> state = AgentState(session_id="demo")
        >>> AgentState.from_json(state.to_json()) == state
        True
    """

    model_config = ConfigDict(allow_inf_nan=False)  # (see _finite.py; DESIGN §8 refuses them)

    schema_version: int = SCHEMA_VERSION
    session_id: str = Field(min_length=1)
    history: tuple[AgentMessage, ...] = ()
    usages: tuple[Usage, ...] = ()
    metadata: Annotated[dict[str, Any], _METADATA] = Field(default_factory=lambda: _METADATA.freeze({}))
    is_running: bool = False
    total_loop_count: int = Field(default=0, ge=0)
    current_loop_count: int = Field(default=0, ge=0)
    last_error: ErrorInfo | None = None
    pending_approval: PendingApprovalBatch | None = None
    not_resumable: bool = False
    current_run_id: str | None = None
    last_stop_reason: str | None = None
    event_sequence: int = Field(default=0, ge=0)
    loop_window: tuple[str, ...] = ()
    loop_forgiven: tuple[str, ...] = ()
    updated_at: float = 0.0
    revision: int = Field(default=0, ge=0)
    extensions: Annotated[dict[str, Any], _EXTENSIONS] = Field(default_factory=lambda: _EXTENSIONS.freeze({}))
    resolved_approvals: tuple[ResolvedApproval, ...] = ()
    run_output: SavedOutputType | None = Field(default=None, exclude_if=lambda v: v is None)

    @property
    def plan(self) -> Plan | None:
        """The planner's current plan (``Plan(version, items)``), or None (DESIGN §14)."""
        return plan_of(self.extensions)

    @property
    def active_skills(self) -> tuple[str, ...]:
        """The names of the skills activated in this session, oldest first."""
        return active_skills_of(self.extensions)

    @property
    def context_summaries(self) -> tuple[ContextSummary, ...]:
        """The context compressor's summaries, each with the range of messages it replaces
        in model requests (``history`` itself keeps every message), oldest first."""
        return context_summaries_of(self.extensions)

    @property
    def total_usage(self) -> Usage:
        """The sum of :attr:`usages`."""
        total = Usage()
        for usage in self.usages:
            total = total + usage
        return total

    def to_json(self) -> str:
        """The JSON document storage backends write."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "<memory>") -> AgentState:
        """Parse a saved document strictly, migrating older schema versions first.

        Strict means nothing is guessed (DESIGN §8): no type coercion (``"is_running":
        "yes"`` or ``"total_loop_count": "3"`` is corrupt), no NaN or Infinity (nor a
        number so large it reads as infinity), no field
        this arknb does not know (it is named in the error), no nesting deep enough to
        exhaust the parser. A UTF-8 byte order mark is accepted.

        A document of this version is parsed once, by pydantic (:func:`current_document`);
        any other, and any document it refuses, is parsed with ``json`` first, which
        migrates it or names what is wrong: the same documents are refused either way,
        with the same errors.

        Args:
            text: the JSON document.
            source: where it came from (file path, session); named in every error.

        Raises:
            ArkError: ``state_corrupt`` (storage) if the text is not a valid state
                document; ``state_version_unsupported`` (storage) if it comes from a
                newer arknb. Either way nothing is half-read.
        """
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise _corrupt(source, f"not UTF-8 text ({exc.reason})") from None
        elif isinstance(text, str) and text.startswith(_BOM):
            text = text[len(_BOM):]
        if cls is AgentState:
            state = current_document(text)
            if state is not None:
                return state
        # The two-parse way: it migrates older versions and says what is wrong.
        doc = parse_document(text, source=source)
        migrated = migrate(doc, source=source)
        if migrated is not doc:  # an older version: validate what the migrations made of it
            text = json.dumps(migrated, ensure_ascii=False)
        try:
            return cls.model_validate_json(text, strict=True, extra="forbid")
        except ValidationError as exc:
            raise _corrupt(source, _describe(exc)) from None
        except RecursionError:
            raise _corrupt(source, _TOO_DEEP) from None


_BOM = "\ufeff"

# Where a validated AgentState could hold NaN or an infinity (state/_finite.py): its JSON
# fields, which current_document walks. ToolResult.contents' before-validator only turns
# a string into a text part and a list into a tuple; a float reaches the strict tuple as
# it is, and is refused there.
_CHECKED_POSITIONS = frozenset({
    ("metadata.*", "any"), ("extensions.*", "any"), ("pending_approval.items.*.detail.*", "any"),
    ("pending_approval.denied_calls.*.result.contents", "function-before"),
    ("pending_approval.finished_calls.*.result.contents", "function-before"),
    # a tool's structuredContent (DESIGN §15): any JSON, walked below
    ("pending_approval.denied_calls.*.result.structured_content.*", "any"),
    ("pending_approval.finished_calls.*.result.structured_content.*", "any"),
})
_one_parse: bool | None = None  # whether the schema's open positions are the checked ones (found on first use)


def current_document(text: str) -> AgentState | None:
    """The state of a current-version document in one parse, or None to take the two-parse way.

    pydantic validates the text strictly; a NaN, an infinity or a number like ``1e400``
    it accepted can only sit in a JSON field (the float fields refuse them), so walking
    those proves the document is one the two-parse way accepts too, and as the same
    state. Anything else (an older or missing ``schema_version``, a refusal of any kind)
    returns None, and the two-parse way migrates it or names what is wrong, exactly as
    before.
    """
    global _one_parse
    if _one_parse is None:
        _one_parse = open_positions(AgentState) == _CHECKED_POSITIONS
    if not _one_parse:
        return None
    try:
        state = AgentState.model_validate_json(text, strict=True, extra="forbid")
    except Exception:  # the two-parse way raises what it always raised
        return None
    if state.schema_version != SCHEMA_VERSION or "schema_version" not in state.model_fields_set:
        return None  # a document without one is version 1: migrated
    if holds_nonfinite(state.metadata) or holds_nonfinite(state.extensions):
        return None
    if state.pending_approval is not None and any(holds_nonfinite(item.detail)
                                                   for item in state.pending_approval.items):
        return None
    if state.pending_approval is not None and any(
            holds_nonfinite(call.result.structured_content) for call in (*state.pending_approval.denied_calls,
                                                                          *state.pending_approval.finished_calls)
            if call.result.structured_content is not None):
        return None
    return state


_TOO_DEEP = "nested too deeply to be a state document"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    # Python reads 1e400 as infinity, which the next save would write as null: refused
    # like Infinity itself, rather than changed behind the user's back.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is too large for a number (it would be read as infinity)")
    return value


def parse_document(text: str, *, source: str = "<memory>") -> dict[str, Any]:
    """The JSON object of a saved state, parsed but not yet validated.

    NaN and Infinity (which Python's ``json`` would accept) are refused, so is a number
    too large to be anything but infinity (``1e400``), and so is nesting too deep for the
    parser (a ``RecursionError`` never escapes).

    Raises:
        ArkError: ``state_corrupt`` naming ``source``.
    """
    try:
        doc = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise _corrupt(source, _TOO_DEEP) from None
    except (ValueError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise _corrupt(source, f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise _corrupt(source, f"expected a JSON object, got {type(doc).__name__}")
    return doc


def _corrupt(source: str, detail: str) -> ArkError:
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                    f"saved state from {source} is corrupt: {detail}")


def _describe(exc: ValidationError) -> str:
    # Locations and messages only: pydantic's own text quotes the input values, and a
    # corrupt document may hold anything, secrets included.
    problems = []
    for error in exc.errors(include_url=False, include_input=False)[:5]:
        location = ".".join(str(part) for part in error["loc"]) or "<document>"
        if error["type"] == "extra_forbidden":
            problems.append(f"{location}: unknown field (not written by this arknb: a newer version "
                            "or a hand edit?)")
        elif error["type"] == "recursion_loop" or "recursion limit" in error["msg"]:
            problems.append(f"{location}: {_TOO_DEEP}")
        else:
            problems.append(f"{location}: {error['msg']}")
    more = exc.error_count() - len(problems)
    if more > 0:
        problems.append(f"and {more} more")
    return "; ".join(problems)
