"""The hook SPI: a base class with ten slots, each defaulting to pass-through (seed 000 §3).

Hooks *intercept*: they are awaited in order and may change or stop the run. Bus
listeners only *observe*. Subclass :class:`AgentHook` and override the slots you need,
or decorate plain notebook functions with ``@runtime.hooks.<slot>``.
"""

from __future__ import annotations

from enum import StrEnum

from .contexts import (
    AfterRunHookContext, BeforeRunHookContext, ModelCallHookContext, ModelChunkHookContext,
    ModelResponseHookContext, StatePersistenceHookContext, ToolCallHookContext,
    ToolResultHookContext, TurnCompletionHookContext,
)
from .results import (
    BeforeRunHookResult, ModelCallHookResult, ModelChunkHookResult, ModelResponseHookResult,
    StatePersistenceHookResult, ToolCallHookResult, ToolResultHookResult, TurnCompletionHookResult,
)

__all__ = ["AgentHook", "HookSlot", "SLOT_RESULT_TYPES", "OBSERVER_SLOTS"]


class HookSlot(StrEnum):
    """The ten places a hook can act, in the order a run meets them."""

    BEFORE_RUN = "before_run"
    BEFORE_MODEL_CALL = "before_model_call"
    ON_MODEL_CHUNK = "on_model_chunk"
    AFTER_MODEL_CALL = "after_model_call"
    BEFORE_TOOL_CALL = "before_tool_call"
    AFTER_TOOL_CALL = "after_tool_call"
    ON_TURN_COMPLETION = "on_turn_completion"
    BEFORE_PERSIST_STATE = "before_persist_state"
    AFTER_PERSIST_STATE = "after_persist_state"
    AFTER_RUN = "after_run"


class AgentHook:
    """Base class for class-based hooks; every slot passes through by default.

    Example:
        >>> class NoForce(AgentHook):
        ...     async def before_tool_call(self, ctx):
        ...         args = ctx.call.arguments
        ...         if args.get("force"):
        ...             return ToolCallHookResult.proceed(ctx.call.with_arguments({**args, "force": False}))
        ...         return ToolCallHookResult.proceed(ctx.call)
    """

    name: str | None = None
    """Registry name; defaults to the class name."""

    async def before_run(self, ctx: BeforeRunHookContext) -> BeforeRunHookResult:
        return BeforeRunHookResult.proceed(ctx.input)

    async def before_model_call(self, ctx: ModelCallHookContext) -> ModelCallHookResult:
        return ModelCallHookResult.proceed(ctx.request)

    async def on_model_chunk(self, ctx: ModelChunkHookContext) -> ModelChunkHookResult:
        return ModelChunkHookResult.proceed(ctx.text, ctx.reasoning)

    async def after_model_call(self, ctx: ModelResponseHookContext) -> ModelResponseHookResult:
        return ModelResponseHookResult.proceed(ctx.response)

    async def before_tool_call(self, ctx: ToolCallHookContext) -> ToolCallHookResult:
        return ToolCallHookResult.proceed(ctx.call)

    async def after_tool_call(self, ctx: ToolResultHookContext) -> ToolResultHookResult:
        return ToolResultHookResult.proceed(ctx.result)

    async def on_turn_completion(self, ctx: TurnCompletionHookContext) -> TurnCompletionHookResult:
        return TurnCompletionHookResult.accept()

    async def before_persist_state(self, ctx: StatePersistenceHookContext) -> StatePersistenceHookResult:
        return StatePersistenceHookResult.proceed()

    async def after_persist_state(self, ctx: StatePersistenceHookContext) -> None:
        """Observer: runs after a save; exceptions become ``hook.diagnostic`` events."""

    async def after_run(self, ctx: AfterRunHookContext) -> None:
        """Observer: runs exactly once per run; exceptions become ``hook.diagnostic`` events."""


SLOT_RESULT_TYPES: dict[HookSlot, type | None] = {
    HookSlot.BEFORE_RUN: BeforeRunHookResult,
    HookSlot.BEFORE_MODEL_CALL: ModelCallHookResult,
    HookSlot.ON_MODEL_CHUNK: ModelChunkHookResult,
    HookSlot.AFTER_MODEL_CALL: ModelResponseHookResult,
    HookSlot.BEFORE_TOOL_CALL: ToolCallHookResult,
    HookSlot.AFTER_TOOL_CALL: ToolResultHookResult,
    HookSlot.ON_TURN_COMPLETION: TurnCompletionHookResult,
    HookSlot.BEFORE_PERSIST_STATE: StatePersistenceHookResult,
    HookSlot.AFTER_PERSIST_STATE: None,
    HookSlot.AFTER_RUN: None,
}
"""The result class each decision slot must return (None for observer slots)."""

OBSERVER_SLOTS = frozenset({HookSlot.AFTER_PERSIST_STATE, HookSlot.AFTER_RUN})
