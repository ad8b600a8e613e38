"""Episodic memory (DESIGN §14): completed runs become episodes the model can look up.

``AgentRuntime(..., memory=ark.EpisodicMemory(".arknb/memory"))`` installs a
:class:`MemoryExtension`. When a run completes, an episode (session, run, summary,
time) is recorded in the memory's store; its summary comes from ``summarize(messages)``
or, by default, is the run's user input and final answer. The model gets a built-in
``retrieve_memory(query, k=3)`` tool returning the best episodes of every session that
shares the store: keyword scoring (BM25, :mod:`arknb.memory.keywords`) by default,
cosine similarity over ``embed(text) -> list[float]`` when one is given. Nothing
downloads a model: embeddings are whatever the user's function computes.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import math
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Sequence

from pydantic import Field

from ..domain import AgentMessage, ArkError, Role, invalid_argument
from ..events import EventTypes
from ..hooks import AfterRunHookContext, AgentHook, BeforeRunHookContext
from ..runtime.extensions import Extension, ExtensionScope
from ..state import AgentState
from ..tools import Tool, tool
from .episodes import DurableEpisodeStore, Episode, EpisodeStore, JsonlEpisodeStore, SQLiteEpisodeStore
from .keywords import BM25Index, tokenize

__all__ = ["EpisodicMemory", "MEMORY_SLICE", "MemoryExtension", "RETRIEVE_MEMORY", "ScoredEpisode",
           "memory_extension", "run_episode_id"]

RETRIEVE_MEMORY = "retrieve_memory"
MEMORY_SLICE = "memory"
EPISODES_FILE = "episodes.jsonl"


@dataclass(frozen=True, slots=True)
class ScoredEpisode:
    """An episode found by :meth:`EpisodicMemory.retrieve`, with its score (higher is better)."""

    episode: Episode
    score: float


class EpisodicMemory:
    """Remembers completed runs and finds them again by keyword or embedding.

    Args:
        storage_dir_or_store: a folder (episodes go to ``episodes.jsonl`` in it), a path
            ending in ``.sqlite`` or ``.db`` (a :class:`SQLiteEpisodeStore`), a session
            store (``ark.SQLiteStore`` or ``ark.PostgresStore``: a table next to its
            sessions; ``ark.FileStateStorage``: ``episodes.jsonl`` in its folder), or any
            :class:`~arknb.memory.episodes.EpisodeStore`.
        embed: ``embed(text) -> list[float]`` (sync or async); when given, retrieval ranks
            by cosine similarity of the embeddings instead of keywords.
        summarize: ``summarize(messages) -> str`` (sync or async) writes an episode's
            summary from the run's messages; by default the input and the final answer.

    One memory may serve many runtimes and sessions at once: that is how one session
    recalls another.

    Example:
        >>> memory = ark.EpisodicMemory(".arknb/memory")                      # doctest: +SKIP
        >>> runtime = ark.AgentRuntime(model, memory=memory)                  # doctest: +SKIP
        >>> [hit.episode.summary for hit in await memory.retrieve("deploy")]  # doctest: +SKIP
    """

    def __init__(self, storage_dir_or_store: Any, *, embed: Callable[[str], Any] | None = None,
                 summarize: Callable[..., Any] | None = None) -> None:
        self.store: EpisodeStore = _store_of(storage_dir_or_store)
        if embed is not None and not callable(embed):
            raise invalid_argument(f"EpisodicMemory: embed must be callable or None, got {type(embed).__name__}")
        if summarize is not None and not callable(summarize):
            raise invalid_argument(f"EpisodicMemory: summarize must be callable or None, "
                                   f"got {type(summarize).__name__}")
        self.embed = embed
        self.summarize = summarize
        self._episodes: list[Episode] = []
        self._index = BM25Index()
        self._vectors: list[tuple[float, ...] | None] = []
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"EpisodicMemory({self.store!r}, embed={'yes' if self.embed else 'no'})"

    # -- reading ------------------------------------------------------------------------------

    async def episodes(self) -> list[Episode]:
        """Every episode in the store, oldest first (read anew from the store's end)."""
        async with self._lock:
            await self._catch_up()
            return list(self._episodes)

    async def retrieve(self, query: str, k: int = 3) -> list[ScoredEpisode]:
        """The ``k`` best episodes for ``query``, best first (none scoring zero).

        Raises:
            ArkError: ``invalid_argument`` for an empty query or ``k < 1``, or an
                ``embed`` that returns no usable vector (the message names it).
        """
        if not isinstance(query, str) or not query.strip():
            raise invalid_argument("retrieve: query must be a non-empty string")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise invalid_argument(f"retrieve: k must be an int >= 1, got {k!r}")
        async with self._lock:
            await self._catch_up()
            if self.embed is None:
                hits = self._index.search(tokenize(query), k)
            else:
                hits = await self._by_embedding(query, k)
            return [ScoredEpisode(self._episodes[i], score) for i, score in hits]

    async def _catch_up(self) -> None:
        for episode in await self.store.episodes(len(self._episodes)):
            self._episodes.append(episode)
            self._index.add(tokenize(episode.summary))
            self._vectors.append(episode.embedding)

    async def _by_embedding(self, query: str, k: int) -> list[tuple[int, float]]:
        target = await self._embed(query)
        scored: list[tuple[float, int]] = []
        for i, episode in enumerate(self._episodes):
            vector = self._vectors[i]
            if vector is None or len(vector) != len(target):
                # Recorded before embed= was given (or with another embedding model): embed it now.
                vector = await self._embed(episode.summary)
                self._vectors[i] = vector
            score = _cosine(target, vector)
            if score > 0.0:
                scored.append((score, i))
        scored.sort(key=lambda pair: (-pair[0], -pair[1]))
        return [(i, score) for score, i in scored[:k]]

    async def _embed(self, text: str) -> tuple[float, ...]:
        try:
            value = self.embed(text)
            if inspect.isawaitable(value):
                value = await value
            vector = tuple(float(x) for x in value)
        except ArkError:
            raise
        except Exception as exc:
            raise invalid_argument(f"EpisodicMemory: embed() failed: {type(exc).__name__}: {exc}") from exc
        if not vector or not all(math.isfinite(x) for x in vector):
            raise invalid_argument("EpisodicMemory: embed() must return a non-empty list of finite numbers")
        return vector

    # -- writing -----------------------------------------------------------------------------

    async def record(self, *, session_id: str, run_id: str, messages: Sequence[AgentMessage],
                     created_at: float | None = None, episode_id: str | None = None) -> Episode:
        """Record one episode from a run's messages (what the runtime does when a run completes).

        Args:
            episode_id: the episode's id (a fresh one by default; the runtime passes
                :func:`run_episode_id`, one per run).
        """
        user_text = "\n".join(m.text for m in messages if m.role is Role.USER and m.text)
        answer = next((m.text for m in reversed(messages) if m.role is Role.ASSISTANT and m.text), "")
        if self.summarize is not None:
            summary = self.summarize(list(messages))
            if inspect.isawaitable(summary):
                summary = await summary
            if not isinstance(summary, str) or not summary.strip():
                raise invalid_argument("EpisodicMemory: summarize() must return a non-empty str")
        else:
            summary = f"User: {user_text}\nAssistant: {answer}"
        embedding = await self._embed(summary) if self.embed is not None else None
        episode = Episode(episode_id=episode_id or f"episode_{uuid.uuid4().hex[:12]}", session_id=session_id,
                          run_id=run_id,
                          summary=summary.strip(), created_at=time.time() if created_at is None else created_at,
                          input=user_text, answer=answer, embedding=embedding)
        await self.store.add(episode)
        return episode


def memory_extension(value: Any) -> MemoryExtension | None:
    """What ``AgentRuntime(memory=value)`` installs (one extension per runtime)."""
    if isinstance(value, MemoryExtension):
        return value
    if not isinstance(value, EpisodicMemory):
        raise invalid_argument(f"memory= takes an ark.EpisodicMemory, got {type(value).__name__}")
    return MemoryExtension(value)


class MemoryExtension(Extension):
    """The memory installed in one runtime: ``retrieve_memory`` and the hooks that record."""

    name = MEMORY_SLICE

    def __init__(self, memory: EpisodicMemory) -> None:
        self.memory = memory
        self._scope: ExtensionScope | None = None
        self._tool = self._build_tool()
        self._hook = _Recorder(self)

    def setup(self, scope: ExtensionScope) -> None:
        self._scope = scope

    def for_new_session(self) -> MemoryExtension:
        return MemoryExtension(self.memory)  # the same memory: it spans sessions by design

    def tools(self, state: AgentState) -> tuple[Tool, ...]:
        return (self._tool,)

    def hooks(self) -> tuple[AgentHook, ...]:
        return (self._hook,)

    def _build_tool(self) -> Tool:
        memory = self.memory

        @tool(name=RETRIEVE_MEMORY, read_only=True)
        async def retrieve_memory(
                query: Annotated[str, Field(min_length=1, description="What to look for.")],
                k: Annotated[int, Field(ge=1, le=10, description="How many episodes to return.")] = 3) -> str:
            """Look up earlier conversations (this session's and other sessions') that were completed and
            remembered: what was asked, what was found and answered. Use it when the user refers to earlier
            work or when past results would help."""
            hits = await memory.retrieve(query, k)
            if not hits:
                return f"No remembered episode matches {query!r}."
            blocks = [f"--- episode {n} (session {h.episode.session_id}, "
                      f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(h.episode.created_at))}, "
                      f"score {h.score:.2f}) ---\n{h.episode.summary}" for n, h in enumerate(hits, 1)]
            return f"{len(hits)} remembered episode(s), best first:\n\n" + "\n\n".join(blocks)

        return retrieve_memory

    async def on_restore(self, state: AgentState) -> None:
        # A process that ended after a run's terminal save and before its episode was
        # written (summarize and embed run then, and may take a while) left a completed run
        # unremembered: record it now. Its id is the run's, so it is never kept twice.
        scope = self._scope
        slice_ = scope.slice or {}
        run_id = slice_.get("run_id")
        if not (isinstance(run_id, str) and run_id and slice_.get("recorded") != run_id and not state.is_running
                and state.current_run_id == run_id and state.last_stop_reason == "completed"):
            return
        try:
            wanted = run_episode_id(scope.session_id, run_id)
            if any(e.episode_id == wanted for e in await self.memory.episodes()):
                scope.set_slice({**slice_, "recorded": run_id})  # written before the end, not yet noted
                return
            await self._hook.remember(state, run_id)
        except Exception as exc:  # the session restores all the same; the next restore tries again
            scope.emit(EventTypes.HOOK_DIAGNOSTIC, {
                "slot": "on_restore", "hook": self._hook.name, "kind": "exception", "fail_closed": False,
                "message": f"could not record the episode of run {run_id}: {type(exc).__name__}: {exc}"})


def run_episode_id(session_id: str, run_id: str) -> str:
    """The id of the episode the runtime records for run ``run_id`` of ``session_id``."""
    return "episode_" + hashlib.sha256(f"{session_id}\x00{run_id}".encode()).hexdigest()[:16]


class _Recorder(AgentHook):
    """Notes where a run's messages start; records the episode when the run completes."""

    name = "episodic_memory"

    def __init__(self, extension: MemoryExtension) -> None:
        self.ext = extension

    async def before_run(self, ctx: BeforeRunHookContext) -> None:
        # Saved with the run's first save, so a run continued after an approval or a
        # restore still knows where its messages start, and a restore after its terminal
        # save knows which run's episode may be missing.
        self.ext._scope.set_slice({"run_start": len(ctx.state.history), "run_id": ctx.run_id})
        return None

    async def after_run(self, ctx: AfterRunHookContext) -> None:
        if ctx.result.stop_reason != "completed":
            return
        await self.remember(ctx.state, ctx.run_id)

    async def remember(self, state: AgentState, run_id: str) -> None:
        """Record the episode of completed run ``run_id`` (once: its id is the run's)."""
        scope = self.ext._scope
        history = state.history
        slice_ = dict(scope.slice or {})
        start = slice_.get("run_start")
        if not isinstance(start, int) or not 0 <= start < len(history):
            start = next((i for i in range(len(history) - 1, -1, -1) if history[i].role is Role.USER), 0)
        episode = await self.ext.memory.record(session_id=scope.session_id, run_id=run_id,
                                               messages=history[start:], created_at=scope.clock(),
                                               episode_id=run_episode_id(scope.session_id, run_id))
        scope.set_slice({**slice_, "recorded": run_id})  # (saved with the next save; until then the id dedups)
        scope.emit(EventTypes.MEMORY_RECORDED, lambda: {
            "episode_id": episode.episode_id, "summary": episode.summary, "run_id": episode.run_id})


def _store_of(value: Any) -> EpisodeStore:
    if isinstance(value, (str, os.PathLike)):
        path = Path(value)
        if path.suffix in (".sqlite", ".sqlite3", ".db"):
            return SQLiteEpisodeStore(path)
        if path.suffix == ".jsonl":
            return JsonlEpisodeStore(path)
        return JsonlEpisodeStore(path / EPISODES_FILE)
    if isinstance(value, EpisodeStore):
        return value
    # A session store (the runtime's own storage=): episodes go where it keeps its sessions.
    if callable(getattr(value, "episode_rows", None)):  # SQLiteStore, PostgresStore
        return DurableEpisodeStore(value.episode_rows())
    location = getattr(value, "location", None)
    if isinstance(location, tuple) and len(location) == 2 and isinstance(location[1], str):
        kind, where = location
        if kind == "file":
            return JsonlEpisodeStore(Path(where) / EPISODES_FILE)
        raise invalid_argument(f"EpisodicMemory cannot keep episodes in a {type(value).__name__} ({kind}) yet: "
                               "pass a folder, a .sqlite/.db/.jsonl path, an ark.SQLiteStore, ark.PostgresStore or "
                               "ark.FileStateStorage, or an EpisodeStore of your own")
    raise invalid_argument(f"EpisodicMemory needs a folder, a .sqlite/.db/.jsonl path, an ark.SQLiteStore, "
                           f"ark.PostgresStore or "
                           f"ark.FileStateStorage, or an EpisodeStore (async add(episode) and episodes(start)), "
                           f"got {type(value).__name__}")


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


