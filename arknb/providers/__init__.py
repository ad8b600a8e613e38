"""Model providers: the LLMClient protocol, the offline ScriptedModel and HTTP clients."""

from .base import LLMClient
from .scripted import ScriptedModel, ScriptedTurn

__all__ = ["LLMClient", "ScriptedModel", "ScriptedTurn"]
