"""Schema migrations for saved :class:`~arknb.state.AgentState` documents.

Each entry of :data:`MIGRATIONS` lifts a parsed JSON document from version ``n`` to
``n + 1``; :func:`migrate` applies them in order up to :data:`SCHEMA_VERSION`. A
document without ``schema_version`` is version 1. A document from a newer arknb is
refused with ``state_version_unsupported`` before any field is read, so it is never
half-understood (DESIGN §8).

Version history:

* 1 — the first format: no approvals, no run bookkeeping; token usage under ``usage``.
* 2 — adds ``pending_approval``, ``not_resumable``, ``current_run_id``,
  ``last_stop_reason``, ``event_sequence``; ``usage`` is renamed
  ``usages`` (seed 000 §8.2: the approval batch lives in schema version 2).
* 3 — adds ``revision`` (the stored revision a state was read or saved at: saves are a
  compare-and-swap on it, DESIGN §8) and ``extensions`` (one JSON slice per runtime
  extension, DESIGN §14: the plan, active skills, context summaries, ...). A version 2
  document has neither; it reads as revision 0 with no slices. ``resolved_approvals``
  (the decisions of recently resolved batches) is an optional field added within
  version 3.
"""

from __future__ import annotations

from typing import Any, Callable

from arknb.domain import ArkError, ErrorCode, ErrorLayer

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    # The fields new in v2 are simply absent in v1; the model's defaults fill them.
    doc = dict(doc)
    if "usage" in doc:
        if "usages" in doc:
            raise ValueError("a version 1 document has both 'usage' and 'usages'")
        doc["usages"] = doc.pop("usage")
    doc["schema_version"] = 2
    return doc


def _v2_to_v3(doc: dict[str, Any]) -> dict[str, Any]:
    # Both fields are new and have defaults: a v2 document lacks them (revision 0, no slices).
    doc = dict(doc)
    doc["schema_version"] = 3
    return doc


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3}
"""``MIGRATIONS[n]`` turns a version ``n`` document into a version ``n + 1`` document."""

SCHEMA_VERSION: int = max(MIGRATIONS) + 1
"""The version this arknb writes."""


def migrate(doc: dict[str, Any], *, source: str = "<memory>") -> dict[str, Any]:
    """Return ``doc`` lifted to :data:`SCHEMA_VERSION` (the input is not modified).

    Args:
        doc: a parsed state document.
        source: where it came from, for error messages (a file path or session).

    Raises:
        ArkError: ``state_version_unsupported`` (storage) for a version newer than this
            arknb knows; ``state_corrupt`` (storage) for a version that is not a positive
            integer or a document a migration cannot lift.
    """
    version = doc.get("schema_version", 1)
    # bool is an int in Python; a boolean version is a corrupt document, not version 1.
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                       f"saved state from {source} has an invalid schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_VERSION_UNSUPPORTED,
                       f"saved state from {source} has schema_version {version}, but this arknb "
                       f"reads versions up to {SCHEMA_VERSION}; upgrade arknb to load it "
                       "(the file was not read and is left untouched)")
    while version < SCHEMA_VERSION:
        try:
            doc = MIGRATIONS[version](doc)
        except (ValueError, TypeError, AttributeError) as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                           f"saved state from {source} could not be migrated from schema_version "
                           f"{version}: {exc}") from None
        version += 1
    return doc
