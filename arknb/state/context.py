"""Context summaries as saved data: what the context compressor keeps in its slice.

A compression (DESIGN §14) never touches ``state.history``: it replaces older messages
*in the model request* by one summary message and records here which messages each
summary stands for, so later requests reuse it and the summarizer is never asked twice
for the same range. ``state.context_summaries`` reads them without importing
``arknb.memory``.

The compressor's slice is ``state.extensions["context"]``::

    {"summaries": [{"summary_id": "...", "start": 0, "end": 12, "text": "...", ...}, ...]}

``start``/``end`` index the conversation of the request, after its leading system
messages, which is ``state.history`` unless a ``before_model_call`` hook reshaped the
list. ``digest`` is a hash of the messages the summary replaced, as the compressor saw
them (the effective view, seed 004 §6): a summary whose messages no longer hash the same
(a hook now rewrites one of them) is stale and is not used again.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from arknb.domain import ArkError, ErrorCode, ErrorLayer

__all__ = ["CONTEXT_SLICE", "ContextSummary", "context_summaries_of"]

CONTEXT_SLICE = "context"
"""The context compressor's extension name: the key of its slice in ``state.extensions``."""


class ContextSummary(BaseModel):
    """One summary standing for the messages ``start`` to ``end - 1`` of the conversation.

    Attributes:
        summary_id: stable id (named in ``context.compressed`` events).
        start: index of the first message it replaces.
        end: one past the last message it replaces.
        text: the summary the model sees.
        digest: sha256 over the replaced messages as seen (the summary's source version).
        tokens: estimated tokens of ``text``.
        replaced_tokens: estimated tokens of the messages it replaces.
        source: ``"summarize"`` (the given function), ``"model"`` (the runtime's model)
            or ``"merge"`` (earlier summaries joined into one).
        merged: for a merge, the ids of the summaries it joins.
        created_at: when it was made (seconds since the epoch).
        run_id: the run whose model call made it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary_id: str = Field(min_length=1)
    start: int = Field(ge=0)
    end: int = Field(ge=1)
    text: str
    digest: str = Field(min_length=1)
    tokens: int = Field(ge=0)
    replaced_tokens: int = Field(ge=0)
    source: Literal["summarize", "model", "merge"]
    merged: tuple[str, ...] = ()
    created_at: float
    run_id: str | None = None

    @model_validator(mode="after")
    def _check_range(self) -> ContextSummary:
        if self.end <= self.start:
            raise ValueError(f"a summary replaces at least one message (start {self.start}, end {self.end})")
        return self

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON-ready form kept in the slice."""
        return self.model_dump(mode="json")


def context_summaries_of(extensions: dict[str, Any]) -> tuple[ContextSummary, ...]:
    """The recorded summaries, oldest first (empty before any compression).

    Raises:
        ArkError: ``state_corrupt`` naming the slice if it does not hold summaries.
    """
    slice_ = extensions.get(CONTEXT_SLICE)
    if not slice_:
        return ()
    raw = slice_.get("summaries", []) if isinstance(slice_, dict) else None
    if not isinstance(raw, list):
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                       "the saved context summaries (state.extensions['context']['summaries']) are not a list")
    try:
        return tuple(ContextSummary.model_validate(item) for item in raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "<summary>"
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                       f"a saved context summary is invalid ({where}: {first['msg']})") from None
