"""Hooks: the SPI, the results and contexts, the pipeline and the notebook registry."""

from .contexts import (
    AfterRunHookContext, BeforeRunHookContext, HookContext, ModelCallHookContext,
    ModelChunkHookContext, ModelResponseHookContext, ReadOnlyContextError, StatePersistenceHookContext,
    ToolCallHookContext, ToolResultHookContext, TurnCompletionHookContext,
)
from .pipeline import HookPipeline
from .registry import HookEntry, HookRegistry
from .results import (
    BeforeRunAction, BeforeRunHookResult, ModelCallAction, ModelCallHookResult, ModelChunkAction,
    ModelChunkHookResult, ModelResponseAction, ModelResponseHookResult, PersistAction,
    StatePersistenceHookResult, ToolCallAction, ToolCallHookResult, ToolResultAction,
    ToolResultHookResult, TurnCompletionAction, TurnCompletionHookResult,
)
from .spi import AgentHook, HookSlot

__all__ = [
    "AfterRunHookContext", "AgentHook", "BeforeRunAction", "BeforeRunHookContext", "BeforeRunHookResult",
    "HookContext", "HookEntry", "HookPipeline", "HookRegistry", "HookSlot", "ModelCallAction",
    "ModelCallHookContext", "ModelCallHookResult", "ModelChunkAction", "ModelChunkHookContext",
    "ModelChunkHookResult", "ModelResponseAction", "ModelResponseHookContext", "ModelResponseHookResult",
    "PersistAction", "ReadOnlyContextError", "StatePersistenceHookContext", "StatePersistenceHookResult", "ToolCallAction",
    "ToolCallHookContext", "ToolCallHookResult", "ToolResultAction", "ToolResultHookContext",
    "ToolResultHookResult", "TurnCompletionAction", "TurnCompletionHookContext", "TurnCompletionHookResult",
]
