"""What makes a model request differ from the raw history (seed 004's ContextManager).

The history a session keeps is append-only: its length is its version. A model request
is that history as the model sees it: instructions put in front of it (the system
prompt, extensions' sections such as a skill's instructions), messages a hook rewrote,
older messages a compressor replaced by a summary. Every request carries
``context_version`` (the length of the raw history it was built from) and one
:class:`ContextChange` per difference, so what the model saw can always be told from
what was said, and shown as a diff (DESIGN §16).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["ContextChange"]


class ContextChange(BaseModel):
    """One difference between a model request and the raw history.

    Attributes:
        source: who made it: ``system_prompt``, ``extension`` (a section such as a
            skill's instructions or the plan guide), ``context_compressor``,
            ``executor_scope`` (a PlanAndExecute executor's private session), or
            ``hook:<name>`` (a ``before_model_call`` hook's rewrite).
        kind: ``instructions`` (put in front of the history), ``summary`` (history
            messages replaced by a summary), ``rewrite`` (history messages replaced by
            others), ``insert`` (messages the history does not have), ``drop`` (history
            messages left out), ``scope`` (the request is a private context: an executor
            sees its task, not its planner's history).
        range: ``(start, end)``: the history messages concerned (``end`` excluded;
            ``start == end`` for an insertion before ``start``).
        sent: ``(start, end)``: where the request holds what replaced them.
    """

    model_config = ConfigDict(frozen=True)

    source: str
    kind: str
    range: tuple[int, int]
    sent: tuple[int, int] = (0, 0)
