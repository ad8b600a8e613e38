"""The context a tool may ask for: who is calling, in which run and batch, and a way to stop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from arknb.domain import CancellationToken, ToolResult, invalid_argument

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
        on_defer: set by the runtime: what :meth:`defer` reports to (None when a tool
            is called by hand).
        on_progress: set by the runtime: what :meth:`report_progress` reports to.
        on_elicit: set by the runtime when it can ask a person: what :meth:`elicit` asks.
        on_sample: set by the runtime: what :meth:`sample` asks (the runtime's model).

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
    on_defer: Callable[[str, str, str, dict | None], ToolResult] | None = field(default=None, repr=False)
    on_progress: Callable[[str, float, float | None, str | None], None] | None = field(default=None, repr=False)
    on_elicit: Callable[[str, str, dict, dict | None], Awaitable[dict]] | None = field(default=None, repr=False)
    on_sample: Callable[[str, list, str | None, int | None, dict | None], Awaitable[str]] | None = field(
        default=None, repr=False)

    async def sample(self, messages: list[tuple[str, str]], *, system: str | None = None,
                     max_tokens: int | None = None, detail: dict | None = None) -> str:
        """Ask the runtime's own model on the tool's behalf (an MCP server's sampling request,
        allowed with ``MCPServer(..., allow_sampling=True)``); returns the model's text.

        ``messages`` are ``(role, text)`` pairs, role ``"user"`` or ``"assistant"``.

        Raises:
            ArkError: ``tool_denied`` outside a runtime that can sample.
        """
        if self.on_sample is None:
            from arknb.domain import ArkError, ErrorCode, ErrorLayer
            raise ArkError(ErrorLayer.SECURITY, ErrorCode.TOOL_DENIED, "no runtime model is available to sample")
        return await self.on_sample(self.call_id, list(messages), system, max_tokens, dict(detail) if detail else None)

    async def elicit(self, message: str, schema: dict, detail: dict | None = None) -> dict:
        """Ask a person for a few values while this call runs (an MCP server's elicitation).

        ``schema`` is a flat JSON object schema of primitive fields. Returns ``{"action":
        "accept", "content": {...}}``, ``{"action": "decline"}`` or ``{"action": "cancel"}``;
        outside a runtime that can ask (no tool sources, a call made by hand) it declines.
        """
        if self.on_elicit is None:
            return {"action": "decline"}
        return await self.on_elicit(self.call_id, str(message), dict(schema), dict(detail) if detail else None)

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell whoever watches the run how far this call got (a ``tool.progress`` event).

        A no-op when the tool is called by hand (no runtime listens).
        """
        if self.on_progress is not None:
            self.on_progress(self.call_id, float(progress), None if total is None else float(total),
                             None if message is None else str(message))

    def defer(self, reason: str, *, kind: str = "tool", detail: dict | None = None) -> ToolResult:
        """Hand this call to a person instead of answering it now; return what this returns.

        The batch pauses like an approval once its other calls finished: their results
        are kept, the pending batch is saved, ``approval.required`` is published and the
        run ends ``awaiting_approval``. When the item is decided, an approved call runs
        again (with the same ``call_id``, so the tool can pick up what it started) and a
        denied one is answered ``tool_denied``; an extension's approval ``kind`` may
        decide otherwise. A sub-agent waiting for its own approvals defers its
        ``delegate_task`` call this way. On a durable store, a process that ends after
        the call deferred and before the pause was saved leaves a restore to ask the
        person with what the call gave here (it does not run again), unless the tool
        is ``idempotent`` (it runs again, as ``delegate_task`` does to pick its child up).

        Raises:
            ArkError: ``invalid_argument`` outside a call the runtime runs, or with an
                empty reason.
        """
        if self.on_defer is None:
            raise invalid_argument("ctx.defer() works only inside a tool call run by an AgentRuntime")
        if not isinstance(reason, str) or not reason.strip():
            raise invalid_argument("ctx.defer() needs a reason a person can read")
        return self.on_defer(self.call_id, reason.strip(), kind, dict(detail) if detail else None)
