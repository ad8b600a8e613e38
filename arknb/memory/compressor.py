"""Context compression (DESIGN §14, seed 004 §6): older messages become one summary in the request.

``AgentRuntime(..., compressor=ark.ContextCompressor(8_000))`` installs a
:class:`ContextExtension`. Before every model call its ``before_model_call`` hook (it runs
after the user's hooks, so it reads the effective view, seed 004 §6) estimates the
request's tokens; if they exceed ``max_tokens`` it replaces the oldest messages *in the
request* by one summary message:

* ``state.history`` is never changed; each summary is recorded in
  ``state.context_summaries`` with the range of messages it replaces and a digest of
  them (its source version), and later requests reuse it: the summarizer is asked only
  about messages that newly overflow, never again about a range it summarised;
* a cut never separates an assistant's tool calls from their results, and the last
  ``keep_last`` messages are kept as they are (fewer only when the budget demands it);
* ``context.compressed`` is published with the estimates before and after and the range;
* the model is offered ``search_history(query, k=3)`` over the replaced messages;
* a request that cannot fit even compressed (one huge message among those kept) ends the
  model call with ``context_budget_exceeded``, naming the message: nothing is truncated.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable

from pydantic import Field

from ..domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, ModelRequest, Role, invalid_argument
from ..events import EventTypes
from ..hooks import AgentHook, ModelCallHookContext, ModelCallHookResult
from ..runtime.extensions import Extension, ExtensionScope
from ..state import CONTEXT_SLICE, AgentState, ContextSummary, context_summaries_of
from ..tools import Tool, ToolContext, tool
from ._view import MessageCosts, safe_cuts
from .history_search import HistoryIndex
from .summaries import write_summary
from .tokens import estimate_message_tokens, estimate_text_tokens, estimate_tools_tokens

__all__ = ["ContextCompressor", "ContextExtension", "SEARCH_HISTORY", "compressor_extension"]

SEARCH_HISTORY = "search_history"

_MERGE_SHARE = 0.5  # summaries taking more than this share of the budget are merged into one


class ContextCompressor:
    """Keeps model requests under a token budget by summarising older messages.

    Args:
        max_tokens: the budget for a whole request (system prompt, messages, tool
            definitions), in estimated tokens.
        keep_last: messages at the end always sent as they are (fewer only if they alone
            exceed the budget and can be cut without splitting a tool call).
        summarize: ``summarize(messages: list[AgentMessage]) -> str`` (sync or async)
            writes a summary; None asks the runtime's own model.
        count_tokens: ``count_tokens(message: AgentMessage) -> int``; None uses
            :func:`arknb.memory.tokens.estimate_message_tokens` (documented there). Each
            message is counted once and the count cached.

    Example:
        >>> runtime = ark.AgentRuntime(model, compressor=ark.ContextCompressor(4_000))  # doctest: +SKIP
        >>> runtime.state.context_summaries                                             # doctest: +SKIP
    """

    def __init__(self, max_tokens: int, *, keep_last: int = 4, summarize: Callable[..., Any] | None = None,
                 count_tokens: Callable[[AgentMessage], int] | None = None) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise invalid_argument(f"ContextCompressor: max_tokens must be an int >= 1, got {max_tokens!r}")
        if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1:
            raise invalid_argument(f"ContextCompressor: keep_last must be an int >= 1, got {keep_last!r}")
        if summarize is not None and not callable(summarize):
            raise invalid_argument(f"ContextCompressor: summarize must be callable or None, "
                                   f"got {type(summarize).__name__}")
        if count_tokens is not None and not callable(count_tokens):
            raise invalid_argument(f"ContextCompressor: count_tokens must be callable or None, "
                                   f"got {type(count_tokens).__name__}")
        self.max_tokens = max_tokens
        self.keep_last = keep_last
        self.summarize = summarize
        self.count_tokens = count_tokens or estimate_message_tokens

    def __repr__(self) -> str:
        return f"ContextCompressor(max_tokens={self.max_tokens}, keep_last={self.keep_last})"


def compressor_extension(value: Any) -> ContextExtension | None:
    """What ``AgentRuntime(compressor=value)`` installs (one extension per runtime)."""
    if isinstance(value, ContextExtension):
        return value
    if not isinstance(value, ContextCompressor):
        raise invalid_argument(f"compressor= takes an ark.ContextCompressor, got {type(value).__name__}")
    return ContextExtension(value)


class ContextExtension(Extension):
    """The compressor installed in one runtime: its hook, its tool and its cache."""

    name = CONTEXT_SLICE

    def __init__(self, config: ContextCompressor) -> None:
        self.config = config
        self.costs = MessageCosts(config.count_tokens)
        """Per-message token counts of the last request's conversation (matched by identity)."""
        self._scope: ExtensionScope | None = None
        self._fixed: tuple[Any, Any, int] | None = None  # (system messages, tools) -> their tokens
        self._history = HistoryIndex()
        self._valid: dict[str, int] = {}  # summary id -> its end, checked against the current messages
        self._parsed: tuple[Any, tuple[ContextSummary, ...]] | None = None
        self._summary_cache: tuple[tuple[str, ...], AgentMessage, int] | None = None
        self._tool = self._build_tool()
        self._hook = _CompressHook(self)

    def for_new_session(self) -> ContextExtension:
        return ContextExtension(self.config)

    def setup(self, scope: ExtensionScope) -> None:
        if self._scope is not None:
            raise invalid_argument("a context compressor extension serves one runtime; give each runtime its own "
                                   "compressor=ark.ContextCompressor(...)")
        self._scope = scope

    def tools(self, state: AgentState) -> tuple[Tool, ...]:
        # Offered once something was replaced: before that there is nothing to search.
        slice_ = state.extensions.get(CONTEXT_SLICE)
        return (self._tool,) if slice_ and slice_.get("summaries") else ()

    def hooks(self) -> tuple[AgentHook, ...]:
        return (self._hook,)

    def on_restore(self, state: AgentState) -> None:
        context_summaries_of(state.extensions)  # a corrupt slice fails here, naming it

    # -- the decision -----------------------------------------------------------------------

    async def compress(self, request: ModelRequest, state: AgentState, turn: int) -> ModelRequest | None:
        """The request to send instead of ``request``, or None when it fits as it is."""
        config = self.config
        messages = request.messages
        lead_count = 0
        while lead_count < len(messages) and messages[lead_count].role is Role.SYSTEM:
            lead_count += 1
        conversation = messages[lead_count:]
        costs = self.costs
        changed = costs.sync(conversation)
        # A summary checked before stays valid while none of its messages changed.
        self._valid = {sid: end for sid, end in self._valid.items() if end <= changed}
        fixed = self._fixed_tokens(messages[:lead_count], request.tools)
        before = fixed + costs.tokens()
        if before <= config.max_tokens:
            return None
        n = len(conversation)
        summaries = list(self._recorded(state))
        chain = self._chain(summaries, n)
        tool_extra = 0 if any(t.name == SEARCH_HISTORY for t in request.tools) else self._tool_tokens()
        created: list[ContextSummary] = []
        safe: list[bool] | None = None

        def cannot_fit(end: int, summary_tokens: int) -> ArkError:
            return _budget_error(config.max_tokens, request, messages[:lead_count], tool_extra and self._tool,
                                 summary_tokens, conversation, costs, end, n, created)

        if not chain:
            # Before paying for any summary: if even the smallest tail that can be sent alone,
            # with the shortest summary, cannot fit, no summary can help (issue 26).
            safe = safe_cuts(conversation)
            last = next((cut for cut in range(n - 1, 0, -1) if safe[cut]), None)
            floor = fixed + tool_extra + self._shortest_summary_tokens() + costs.tokens(last or 0, n)
            if last is None or floor > config.max_tokens:
                raise cannot_fit(last or 0, self._shortest_summary_tokens() if last else 0)
        try:
            while True:
                end = chain[-1].end if chain else 0
                summary_tokens = self._summary_tokens(chain)
                after = fixed + tool_extra + summary_tokens + costs.tokens(end, n)
                if after <= config.max_tokens:
                    break
                if safe is None:
                    safe = safe_cuts(conversation)
                cut, keeps_enough = _next_cut(safe, end, n, config.keep_last)
                # Merging summaries comes before sending fewer than keep_last raw messages.
                if len(chain) > 1 and (summary_tokens > config.max_tokens * _MERGE_SHARE or not keeps_enough):
                    merged = await self._merge(chain, request, state)
                    summaries = [s for s in summaries if s.summary_id not in merged.merged] + [merged]
                    created = [s for s in created if s.summary_id not in merged.merged] + [merged]
                    chain = [merged]
                    continue
                if cut is None:
                    raise cannot_fit(end, summary_tokens)
                summary = await self._summarize(conversation, end, cut, request, state)
                self._valid[summary.summary_id] = summary.end
                summaries.append(summary)
                created.append(summary)
                chain.append(summary)
        finally:
            if created:
                # Recorded even when the request still does not fit: a range is never summarised twice.
                self._scope.set_slice({"summaries": [s.to_json_dict() for s in summaries]})
        end = chain[-1].end
        compressed = (*messages[:lead_count], self._summary(chain)[0], *conversation[end:])
        tools = request.tools if not tool_extra else (*request.tools, self._tool.definition)
        self._scope.emit(EventTypes.CONTEXT_COMPRESSED, lambda: {
            "before_tokens": before, "after_tokens": after, "max_tokens": config.max_tokens,
            "replaced": {"start": 0, "end": end}, "kept_messages": n - end, "turn": turn,
            "summaries": [s.summary_id for s in chain], "new_summaries": [s.summary_id for s in created],
            "summarizer": created[-1].source if created else None})
        return request.model_copy(update={"messages": compressed, "tools": tools})

    def _recorded(self, state: AgentState) -> tuple[ContextSummary, ...]:
        """The saved summaries, parsed once per slice (the slice is replaced, never edited)."""
        slice_ = state.extensions.get(CONTEXT_SLICE)
        cached = self._parsed
        if cached is None or cached[0] is not slice_:
            cached = (slice_, context_summaries_of(state.extensions))
            self._parsed = cached
        return cached[1]

    def _fixed_tokens(self, lead: tuple[AgentMessage, ...], tools: tuple) -> int:
        cached = self._fixed
        if cached is not None and cached[0] == lead and cached[1] is tools:
            return cached[2]
        value = sum(self.costs.count(m) for m in lead) + estimate_tools_tokens(tools)
        self._fixed = (lead, tools, value)
        return value

    def _chain(self, summaries: list[ContextSummary], n: int) -> list[ContextSummary]:
        """The recorded summaries that still stand for the start of this conversation, in order.

        From position 0, take the summary starting there that reaches furthest and whose
        messages still hash as recorded; a stale summary (a hook now shows those messages
        differently) is skipped, never sent (seed 004 §6).
        """
        chain: list[ContextSummary] = []
        position = 0
        while True:
            options = sorted((s for s in summaries if s.start == position and s.end <= n - 1), key=lambda s: -s.end)
            found = next((s for s in options if self._still_valid(s)), None)
            if found is None:
                return chain
            chain.append(found)
            position = found.end

    def _still_valid(self, summary: ContextSummary) -> bool:
        if summary.summary_id in self._valid:
            return True
        if self.costs.digest(summary.start, summary.end) != summary.digest:
            return False
        self._valid[summary.summary_id] = summary.end
        return True

    def _summary(self, chain: list[ContextSummary]) -> tuple[AgentMessage, int]:
        key = tuple(s.summary_id for s in chain)
        cached = self._summary_cache
        if cached is None or cached[0] != key:
            message = _summary_message(chain)
            cached = (key, message, self.costs.count(message))
            self._summary_cache = cached
        return cached[1], cached[2]

    def _shortest_summary_tokens(self) -> int:
        """What a summary message costs at least: its header and a one-word summary."""
        return self.costs.count(_summary_message([ContextSummary(
            summary_id="-", start=0, end=1, text="-", digest="-", tokens=1, replaced_tokens=0, source="summarize",
            created_at=0.0)]))

    def _summary_tokens(self, chain: list[ContextSummary]) -> int:
        return self._summary(chain)[1] if chain else 0

    def _tool_tokens(self) -> int:
        return estimate_tools_tokens((self._tool.definition,))

    async def _summarize(self, conversation, start: int, end: int, request: ModelRequest,
                         state: AgentState) -> ContextSummary:
        text, source = await write_summary(conversation[start:end], summarize=self.config.summarize,
                                           call_model=self._call_model, config=request.config)
        scope = self._scope
        return ContextSummary(
            summary_id=scope.new_id("summary"), start=start, end=end, text=text,
            digest=self.costs.digest(start, end), tokens=estimate_text_tokens(text),
            replaced_tokens=self.costs.tokens(start, end), source=source, created_at=scope.clock(),
            run_id=scope.run_id)

    async def _call_model(self, request: ModelRequest, *, purpose: str):
        # Looked up when used: a summarize function never needs the runtime's model.
        return await self._scope.call_model(request, purpose=purpose)

    async def _merge(self, chain: list[ContextSummary], request: ModelRequest, state: AgentState) -> ContextSummary:
        parts = [AgentMessage.user(f"Summary of messages {s.start + 1}-{s.end}:\n{s.text}") for s in chain]
        text, source = await write_summary(parts, summarize=self.config.summarize, call_model=self._call_model,
                                           config=request.config)
        scope = self._scope
        first, last = chain[0], chain[-1]
        return ContextSummary(
            summary_id=scope.new_id("summary"), start=first.start, end=last.end, text=text,
            digest=self.costs.digest(first.start, last.end), tokens=estimate_text_tokens(text),
            replaced_tokens=sum(s.replaced_tokens for s in chain), source="merge",
            merged=tuple(s.summary_id for s in chain), created_at=scope.clock(), run_id=scope.run_id)

    # -- search_history ------------------------------------------------------------------------

    def _build_tool(self) -> Tool:
        extension = self

        @tool(name=SEARCH_HISTORY, read_only=True)
        def search_history(query: Annotated[str, Field(min_length=1, description="Words to look for.")],
                           ctx: ToolContext,
                           k: Annotated[int, Field(ge=1, le=10, description="How many messages to return.")] = 3,
                           ) -> str:
            """Search the earlier messages of this conversation that were replaced by a summary to fit the
            context window (keyword search). Use it when the summary lacks a detail you need: an exact value,
            a file name, what a tool returned."""
            state = ctx.state
            covered = max((s.end for s in context_summaries_of(state.extensions)), default=0)
            return extension._history.search(state.history, query, k, min(covered, len(state.history)))

        return search_history


class _CompressHook(AgentHook):
    """The compressor's ``before_model_call`` hook (runs after the user's hooks)."""

    name = "context_compressor"

    def __init__(self, extension: ContextExtension) -> None:
        self.ext = extension

    async def before_model_call(self, ctx: ModelCallHookContext) -> ModelCallHookResult | None:
        compressed = await self.ext.compress(ctx.request, ctx.state, ctx.turn)
        if compressed is None:
            return None
        return ModelCallHookResult.proceed(compressed)


def _next_cut(safe: list[bool], end: int, n: int, keep_last: int) -> tuple[int | None, bool]:
    """Where the next summary should end, and whether that still keeps ``keep_last`` messages:
    the latest safe cut that keeps them, else (keeping fewer) the earliest safe cut after
    that; never the whole conversation (the last message is always sent)."""
    target = n - keep_last
    for cut in range(min(target, n - 1), end, -1):
        if safe[cut]:
            return cut, True
    for cut in range(max(target + 1, end + 1), n):
        if safe[cut]:
            return cut, False
    return None, False


def _summary_message(chain: list[ContextSummary]) -> AgentMessage:
    end = chain[-1].end
    header = (f"[Summary of the first {end} messages of this conversation. They were replaced by this summary "
              "to fit the context window; the search_history tool finds their exact text.]")
    return AgentMessage.user("\n\n".join([header, *(s.text for s in chain)]))


def _budget_error(budget: int, request: ModelRequest, lead: tuple[AgentMessage, ...], added_tool: Any,
                  summary: int, conversation, costs: MessageCosts, end: int, n: int,
                  written: list[ContextSummary]) -> ArkError:
    """What does not fit, the token arithmetic, and what was called to try (issue 26: the
    message once said the model was not called after a summary call, and named tool
    definitions the runtime did not have)."""
    largest = max(range(end, n), key=costs.cost)
    message = conversation[largest]
    what = (f"the tool result for call {message.tool_call_id}" if message.role is Role.TOOL
            else f"a {message.role.value} message")
    system = sum(costs.count(m) for m in lead)
    tools = list(request.tools) + ([added_tool.definition] if added_tool else [])
    tool_tokens = estimate_tools_tokens(tuple(tools))
    kept = costs.tokens(end, n)
    total = system + tool_tokens + summary + kept
    parts = [f"{system} system prompt"]
    if tools:
        names = ", ".join(t.name for t in tools)
        added = f"; {added_tool.name} is the compressor's own" if added_tool else ""
        parts.append(f"{tool_tokens} tool definitions ({names}{added})")
    if summary:
        parts.append(f"{summary} summary of messages 1-{end}" if written or end else f"{summary} for the shortest "
                                                                                     "summary")
    parts.append(f"{kept} for messages {end + 1}-{n}, kept as they are")
    by_model = sum(1 for s in written if s.source in ("model", "merge") and s.source != "summarize")
    if written:
        called = (f"{len(written)} summar{'y was' if len(written) == 1 else 'ies were'} written to try "
                  f"({by_model} call(s) to the model for summaries), but the model was not asked to answer")
    else:
        called = "no summary was written (none could make it fit) and the model was not called"
    return ArkError(ErrorLayer.RUNTIME, ErrorCode.CONTEXT_BUDGET_EXCEEDED,
                    f"the request does not fit max_tokens={budget} even compressed: it needs about {total} tokens "
                    f"({' + '.join(parts)}). Messages {end + 1}-{n} cannot be summarised without splitting a tool "
                    f"call from its result or dropping the latest message; the largest, message {largest + 1} "
                    f"({what}), is about {costs.cost(largest)}. Nothing was truncated; {called}. Raise max_tokens "
                    f"to at least {total}, or make that message smaller")
