"""Model providers: the LLMClient protocol, the offline ScriptedModel and the OpenAI-compatible client."""

from . import openai_compat
from .base import LLMClient
from .openai_compat import Capabilities, OpenAICompatibleClient, ProviderProfile, RetryPolicy, Timeouts
from .openai_compat import profiles
from .scripted import ScriptedModel, ScriptedTurn

__all__ = ["Capabilities", "LLMClient", "OpenAICompatibleClient", "ProviderProfile", "RetryPolicy", "ScriptedModel",
           "ScriptedTurn", "Timeouts", "openai_compat", "profiles"]
