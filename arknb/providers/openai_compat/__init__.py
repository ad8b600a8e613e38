"""OpenAI-compatible providers: OpenAI, DeepSeek, Zhipu GLM and local servers (DESIGN §9).

Example:
    >>> from arknb.providers import openai_compat as oc
    >>> client = oc.OpenAICompatibleClient(oc.deepseek(), api_key="sk-...", model="deepseek-chat")
    >>> client.profile.provider_id
    'deepseek'
"""

from .assembler import StreamAssembler, ThinkTagSplitter, ToolCallAccumulator
from .client import OpenAICompatibleClient
from .profiles import Capabilities, ProviderProfile, deepseek, local, openai, zhipu
from .retry import RetryPolicy, Timeouts
from .secrets import ApiKey, ApiKeySource, from_env

__all__ = [
    "ApiKey", "ApiKeySource", "Capabilities", "OpenAICompatibleClient", "ProviderProfile", "RetryPolicy",
    "StreamAssembler", "ThinkTagSplitter", "Timeouts", "ToolCallAccumulator", "deepseek", "from_env", "local",
    "openai", "zhipu",
]
