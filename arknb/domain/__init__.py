"""Pure domain values. This package imports nothing else of arknb."""

from .cancellation import CancellationToken
from .content import ContentKind, ContentPart
from .context import ContextChange
from .errors import ArkError, ErrorCode, ErrorInfo, ErrorLayer, Retryability, invalid_argument
from .frozen import FrozenDict, FrozenList, freeze, thaw
from .messages import AgentMessage, MessageOutput, Role
from .model import FinishReason, ModelConfig, ModelRequest, ModelResponse, OutputSchema, Usage
from .streaming import (
    ModelComplete, ModelStart, ReasoningDelta, RetryNotice, StreamError, StreamingEvent,
    StreamingEventAdapter, TextDelta, ToolCallDelta, UsageUpdate,
)
from .tools import ToolCall, ToolDefinition, ToolResult, ToolRisk

__all__ = [
    "AgentMessage", "ArkError", "CancellationToken", "ContentKind", "ContentPart", "ContextChange", "ErrorCode",
    "ErrorInfo", "ErrorLayer", "FinishReason", "FrozenDict", "FrozenList", "MessageOutput", "Retryability",
    "ModelComplete",
    "ModelConfig", "ModelRequest", "ModelResponse", "ModelStart", "OutputSchema", "ReasoningDelta", "RetryNotice", "Role", "StreamError",
    "StreamingEvent", "StreamingEventAdapter", "TextDelta", "ToolCall", "ToolCallDelta",
    "ToolDefinition", "ToolResult", "ToolRisk", "Usage", "UsageUpdate", "freeze", "invalid_argument", "thaw",
]
