"""arknb: an agent runtime made for Jupyter.

Everything a user needs is re-exported here; see DESIGN §0 for the tour.
"""

# domain
from .domain import (
    AgentMessage, ArkError, CancellationToken, ContentKind, ContentPart, ContextChange, ErrorCode, ErrorInfo,
    ErrorLayer, FinishReason, MessageOutput, ModelComplete, ModelConfig, ModelRequest, ModelResponse, ModelStart, OutputSchema,
    ReasoningDelta, RetryNotice, Retryability, Role, StreamError, StreamingEvent, TextDelta, ToolCall, ToolCallDelta,
    ToolDefinition, ToolResult, ToolRisk, Usage, UsageUpdate,
)

# events
from .events import AgentEvent, EventBus, EventTypes

# hooks
from .hooks import (
    AfterRunHookContext, AgentHook, BeforeRunAction, BeforeRunHookContext, BeforeRunHookResult, HookPipeline,
    HookRegistry, HookSlot, ModelCallAction, ModelCallHookContext, ModelCallHookResult, ModelChunkAction,
    ModelChunkHookContext, ModelChunkHookResult, ModelResponseAction, ModelResponseHookContext,
    ModelResponseHookResult, PersistAction, StatePersistenceHookContext, StatePersistenceHookResult,
    ToolCallAction, ToolCallHookContext, ToolCallHookResult, ToolResultAction, ToolResultHookContext,
    ToolResultHookResult, TurnCompletionAction, TurnCompletionHookContext, TurnCompletionHookResult,
)

# tools
from .tools import SourceTool, Tool, ToolContext, ToolRegistry, ToolSource, tool

# state
from .state import (
    AgentState, ApprovalDecision, ApprovalDecisionResult, FileStateStorage, MemoryStateStorage,
    PendingApprovalBatch, PendingApprovalItem, StateStorage,
)

# durable
from .durable import PostgresStore, SQLiteStore

# providers
from .providers import (
    Capabilities, LLMClient, OpenAICompatibleClient, ProviderProfile, RetryPolicy, Rule, RuleModel, ScriptedModel,
    ScriptedTurn, Timeouts, profiles,
)

# runtime
from .controller import AgentController, ApprovalHost
from .runtime import AgentRunResult, AgentRuntime, LoopDetector, RunHandle, StopReason, live_runtimes
from .runtime.extensions import ApprovalKind, Extension, ExtensionScope
from .runtime.output import OutputErrors, OutputSpec

# planning and skills (extensions installed by plan_mode= and skills=)
from .planner import PendingPlanReview, Plan, PlanItem, PlanMode, TodoStatus
from .skills import Skill, SkillLoadError, SkillLoadReport, load_skills

# context, memory and sub-agents (extensions installed by compressor=, memory=, subagents=)
from .memory import ContextCompressor, EpisodicMemory, SubAgent

# graphs (DESIGN §16)
from .graphs import (
    END, START, Graph, GraphController, GraphRun, GraphStatus, NodeContext, PendingStep, PlanAndExecute, PlanState, append,
)

__version__ = "0.1.0"


# the IPython extension (DESIGN §18): `%load_ext arknb`; IPython is imported only then
def load_ipython_extension(ipython) -> None:
    """Register the ``%%chat`` and ``%arknb`` magics (called by ``%load_ext arknb``)."""
    from .magics import register
    register(ipython)


def __getattr__(name: str):
    # The widgets pull in ipywidgets/anywidget; load them only when asked for.
    if name in ("ChatWidget", "GraphWidget", "TimelineWidget"):
        from . import widgets
        return getattr(widgets, name)
    if name == "agui":  # the AG-UI server (extra arknb[agui]), loaded on first use
        import importlib
        return importlib.import_module(".agui", __name__)
    # tool sources: MCP needs the extra arknb[mcp]; load the SDK only when asked for (DESIGN §15)
    if name == "MCPServer":
        from .tools.mcp import MCPServer
        return MCPServer
    raise AttributeError(f"module 'arknb' has no attribute {name!r}")


__all__ = [
    "END", "START", "Graph", "GraphController", "GraphWidget", "GraphRun", "GraphStatus", "NodeContext", "PendingStep", "PlanAndExecute", "PlanState", "append",
    "Capabilities", "OutputErrors", "OutputSchema", "OutputSpec",
    "MCPServer", "SourceTool", "ToolSource",
    "ApprovalKind", "ContextCompressor", "EpisodicMemory", "Extension", "ExtensionScope", "SubAgent", "PendingPlanReview", "Plan", "PlanItem", "PlanMode", "Skill",
    "SkillLoadError", "SkillLoadReport", "TodoStatus", "load_skills",
    "AfterRunHookContext", "AgentController", "AgentEvent", "AgentHook", "AgentMessage", "AgentRunResult",
    "AgentRuntime", "AgentState", "ApprovalDecision", "ApprovalDecisionResult", "ApprovalHost", "ArkError",
    "BeforeRunAction", "BeforeRunHookContext", "BeforeRunHookResult", "CancellationToken", "ChatWidget",
    "ContentKind", "ContentPart", "ContextChange", "ErrorCode", "ErrorInfo", "ErrorLayer", "EventBus", "EventTypes",
    "FileStateStorage", "FinishReason", "HookPipeline", "HookRegistry", "HookSlot", "LLMClient", "LoopDetector",
    "MemoryStateStorage", "OpenAICompatibleClient", "ProviderProfile", "RetryPolicy", "Timeouts", "profiles", "ModelCallAction", "ModelCallHookContext", "ModelCallHookResult", "ModelChunkAction",
    "MessageOutput", "ModelChunkHookContext", "ModelChunkHookResult", "ModelComplete", "ModelConfig", "ModelRequest",
    "ModelResponse", "ModelResponseAction", "ModelResponseHookContext", "ModelResponseHookResult", "ModelStart",
    "PendingApprovalBatch", "PendingApprovalItem", "PersistAction", "ReasoningDelta", "RetryNotice",
    "Retryability", "Role", "Rule", "RuleModel", "RunHandle", "PostgresStore", "SQLiteStore", "ScriptedModel", "ScriptedTurn", "StatePersistenceHookContext",
    "StatePersistenceHookResult", "StateStorage", "StopReason", "StreamError", "StreamingEvent", "TextDelta",
    "TimelineWidget", "Tool", "ToolCall", "ToolCallAction", "ToolCallDelta", "ToolCallHookContext",
    "ToolCallHookResult", "ToolContext", "ToolDefinition", "ToolRegistry", "ToolResult", "ToolResultAction",
    "ToolResultHookContext", "ToolResultHookResult", "ToolRisk", "TurnCompletionAction",
    "TurnCompletionHookContext", "TurnCompletionHookResult", "Usage", "UsageUpdate", "tool",
    "live_runtimes", "load_ipython_extension",
]
