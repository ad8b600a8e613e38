"""The agent loop. Importing it never imports the widget stack (ipywidgets, anywidget)."""

from .handle import RunHandle
from .live import live_runtimes
from .loop_detector import LoopDetector, LoopHit, tool_signature
from .result import AgentRunResult, NextStep, StopReason
from .runtime import AgentRuntime, RunInput

__all__ = ["AgentRunResult", "AgentRuntime", "LoopDetector", "LoopHit", "NextStep", "RunHandle", "RunInput",
           "StopReason", "live_runtimes", "tool_signature"]
