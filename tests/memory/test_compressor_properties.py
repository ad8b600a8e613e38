"""Property test: over random histories a compression never orphans a tool call or a result.

Histories mix user and assistant text, assistant messages with one to three parallel
tool calls answered in any order, and messages a hook injected after tool results.
For every budget the compressed request must be: the system message, one summary, then
an unbroken tail of the conversation that starts at a safe cut, pairs every call with
its results, keeps what it can of ``keep_last``, and fits; or the run's budget error,
only when even the smallest sendable tail cannot fit.
"""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arknb import AgentMessage, ArkError, ModelConfig, ModelRequest, ToolCall
from arknb.memory import ContextCompressor
from arknb.memory.compressor import ContextExtension
from arknb.memory.tokens import estimate_message_tokens, estimate_tools_tokens
from arknb.state import AgentState, CONTEXT_SLICE


class FakeScope:
    """What the compressor uses of its ExtensionScope."""

    def __init__(self) -> None:
        self.slice = None
        self.ids = itertools.count()
        self.events: list[dict] = []
        self.model = None
        self.run_id = "run_1"

    def set_slice(self, value) -> None:
        self.slice = value

    def emit(self, event_type, payload) -> None:
        self.events.append(payload() if callable(payload) else payload)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self.ids)}"

    def clock(self) -> float:
        return 1.0

    async def call_model(self, request, *, purpose):
        raise AssertionError("these tests summarise with summarize=..., never the model")


words = st.text(alphabet="abcdefgh ", min_size=0, max_size=240)


@st.composite
def histories(draw) -> list[AgentMessage]:
    messages: list[AgentMessage] = [AgentMessage.user("start " + draw(words))]
    ids = itertools.count()
    for _ in range(draw(st.integers(min_value=0, max_value=14))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "tools"]))
        if kind == "user":
            messages.append(AgentMessage.user("u " + draw(words)))
        elif kind == "assistant":
            messages.append(AgentMessage.assistant("a " + draw(words)))
        else:
            calls = [ToolCall(id=f"c{next(ids)}", name="lookup", arguments_json='{"q": "%s"}' % draw(words).strip(),
                              index=i) for i in range(draw(st.integers(min_value=1, max_value=3)))]
            messages.append(AgentMessage.assistant(draw(words), tool_calls=calls))
            for call in draw(st.permutations(calls)):
                messages.append(AgentMessage.tool(call.id, "r " + draw(words)))
            if draw(st.booleans()):
                messages.append(AgentMessage.user("injected " + draw(words)))
        if messages[-1].role != "user" and draw(st.booleans()):
            messages.append(AgentMessage.user("next " + draw(words)))
    return messages


def paired(tail: tuple[AgentMessage, ...]) -> bool:
    issued = {c.id for m in tail if m.role == "assistant" for c in m.tool_calls}
    answered = {m.tool_call_id for m in tail if m.role == "tool"}
    return answered <= issued and tail[0].role != "tool"


def all_answered_in(tail, conversation) -> bool:
    answered_anywhere = {m.tool_call_id for m in conversation if m.role == "tool"}
    issued = {c.id for m in tail if m.role == "assistant" for c in m.tool_calls}
    answered = {m.tool_call_id for m in tail if m.role == "tool"}
    return issued & answered_anywhere <= answered


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), budget=st.integers(min_value=20, max_value=1500),
       keep_last=st.integers(min_value=1, max_value=6), rounds=st.integers(min_value=1, max_value=3))
def test_compression_never_splits_a_tool_call_from_its_results(history, budget, keep_last, rounds) -> None:
    asked: list[list[AgentMessage]] = []

    def summarize(messages):
        asked.append(list(messages))
        return "s"  # short, so a fitting request is possible whenever the tail fits

    extension = ContextExtension(ContextCompressor(budget, keep_last=keep_last, summarize=summarize))
    scope = FakeScope()
    extension.setup(scope)
    system = AgentMessage.system("sys")
    # Grow the conversation over a few calls, as a run does, carrying the slice along.
    cut_points = sorted({len(history) * (r + 1) // rounds for r in range(rounds)})
    for upto in cut_points:
        conversation = tuple(history[:upto])
        if not conversation or conversation[-1].role == "assistant" and conversation[-1].tool_calls:
            continue  # a model call never happens with calls still unanswered
        state = AgentState(session_id="p", history=conversation,
                           extensions={CONTEXT_SLICE: scope.slice} if scope.slice else {})
        request = ModelRequest(messages=(system, *conversation), tools=(), config=ModelConfig())
        raw = sum(estimate_message_tokens(m) for m in request.messages)
        try:
            result = asyncio.run(extension.compress(request, state, 1))
        except ArkError as exc:
            assert exc.code == "context_budget_exceeded", exc
            # Only when the smallest tail that can be sent on its own does not fit.
            last_safe = max(i for i in range(len(conversation)) if paired(conversation[i:])
                            and all_answered_in(conversation[i:], conversation))
            smallest = sum(estimate_message_tokens(m) for m in conversation[last_safe:])
            search_tool = estimate_tools_tokens((extension._tool.definition,))
            one_summary = 50  # the summary message's header and a one-letter summary, at most
            assert smallest + estimate_message_tokens(system) + search_tool + one_summary > budget
            continue
        assert conversation == state.history  # the state is never edited
        if result is None:
            assert raw <= budget
            continue
        messages = result.messages
        assert messages[0] == system and messages[1].text.startswith("[Summary of the first")
        tail = messages[2:]
        end = len(conversation) - len(tail)
        assert tail == conversation[end:] and len(tail) >= 1
        assert paired(tail) and all_answered_in(tail, conversation)
        total = sum(estimate_message_tokens(m) for m in messages) + estimate_tools_tokens(result.tools)
        assert total <= budget
    # The summarizer saw each raw message at most once (merges see summaries, not messages).
    raw_asked = [m for batch in asked for m in batch if not m.text.startswith("Summary of messages")]
    assert len(raw_asked) == len({id(m) for m in raw_asked})
