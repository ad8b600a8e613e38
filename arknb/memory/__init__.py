"""Context compression, episodic memory and sub-agents (DESIGN §14), as runtime extensions.

``AgentRuntime(compressor=..., memory=..., subagents=...)`` installs them; each plugs in
through the runtime's public extension seam (:mod:`arknb.runtime.extensions`).
"""

from .compressor import SEARCH_HISTORY, ContextCompressor, ContextExtension, compressor_extension
from .delegation import DELEGATE_TASK, SUBAGENT_KIND, SubAgentsExtension, subagents_extension
from .episodes import (DurableEpisodeStore, Episode, EpisodeStore, JsonlEpisodeStore, MemoryEpisodeStore,
                       SQLiteEpisodeStore)
from .episodic import (RETRIEVE_MEMORY, EpisodicMemory, MemoryExtension, ScoredEpisode, memory_extension,
                       run_episode_id)
from .keywords import BM25Index, tokenize
from .subagents import SubAgent
from .tokens import estimate_message_tokens, estimate_text_tokens

__all__ = [
    "BM25Index", "ContextCompressor", "DELEGATE_TASK", "SUBAGENT_KIND", "SubAgent", "SubAgentsExtension",
    "subagents_extension", "ContextExtension", "Episode", "EpisodeStore", "EpisodicMemory",
    "JsonlEpisodeStore", "MemoryEpisodeStore", "MemoryExtension", "RETRIEVE_MEMORY", "SEARCH_HISTORY",
    "SQLiteEpisodeStore", "ScoredEpisode", "DurableEpisodeStore", "compressor_extension", "memory_extension",
    "estimate_message_tokens", "estimate_text_tokens", "run_episode_id", "tokenize",
]
