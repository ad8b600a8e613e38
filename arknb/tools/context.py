"""The context a tool may ask for: who is calling, in which run and batch, and a way to stop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arknb.domain import CancellationToken

__all__ = ["ToolContext"]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool knows about its surroundings.

    A tool receives it by declaring a parameter annotated ``ToolContext`` (any name,
    usually ``ctx``). That parameter is injected by the runtime and never appears in
    the JSON Schema the model sees.

    Attributes:
        session_id: The session the run belongs to.
        run_id: The run that made the call.
        state: A read-only snapshot of the agent state (an ``AgentState``); typed
            ``Any`` so the tool layer does not depend on the state layer.
        batch_id: Shared by every call the model made in one turn.
        call_id: The id of this tool call (``ToolCall.id``).
        cancel: Fires when the run is cancelled; long tools should check
            ``ctx.cancel.cancelled`` or ``await ctx.cancel.wait()``.
        idempotency_key: ``{session_id}:{run_id}:{call_id}``, the same every time this
            call runs (also after a restore): pass it to a provider's own dedup (an
            ``Idempotency-Key`` header, a unique column) so a repeated call does no harm.

    Example:
        >>> from arknb.tools import ToolContext, tool
        >>> @tool
        ... def whoami(ctx: ToolContext) -> str:
        ...     "Tell the model its session."
        ...     return ctx.session_id
        >>> whoami(ToolContext(session_id="demo", run_id="r1"))
        'demo'
    """

    session_id: str
    run_id: str
    # The defaults below only serve notebook users who call a tool by hand;
    # the runtime always passes every field.
    state: Any = None
    batch_id: str = ""
    call_id: str = ""
    cancel: CancellationToken = field(default_factory=CancellationToken)
    idempotency_key: str = ""
