"""Model providers: the LLMClient protocol, the offline ScriptedModel and RuleModel, and the OpenAI-compatible client."""

from . import openai_compat
from .base import LLMClient
from .openai_compat import Capabilities, OpenAICompatibleClient, ProviderProfile, RetryPolicy, Timeouts
from .openai_compat import profiles
from .rules import Rule, RuleModel
from .scripted import ScriptedModel, ScriptedTurn

__all__ = ["Capabilities", "LLMClient", "OpenAICompatibleClient", "ProviderProfile", "RetryPolicy", "Rule", "RuleModel",
           "ScriptedModel",
           "ScriptedTurn", "Timeouts", "openai_compat", "profiles"]
