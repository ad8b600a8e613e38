"""Subject (h): LangGraph's prebuilt ReAct agent (``create_react_agent``) over an
offline chat model.

The model is a ``BaseChatModel`` subclass whose ``_astream`` yields 20
``AIMessageChunk`` text chunks then one chunk carrying a ``tool_call_chunks`` entry for
``add`` (the last turn: 20 chunks only). The graph is compiled once (untimed) and each
run is consumed via ``graph.astream(..., stream_mode="messages")``.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import add_args_json, PROMPT, TURNS, Outcome, ToolCounter, chunk_text, main  # noqa: E402

os.environ["LANGSMITH_TRACING"] = "false"  # offline: no tracing exporter
os.environ["LANGCHAIN_TRACING_V2"] = "false"

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, AIMessageChunk  # noqa: E402
from langchain_core.outputs import ChatGenerationChunk, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain.agents
    from langgraph.prebuilt import create_react_agent  # noqa: E402


class ScriptedChatModel(BaseChatModel):
    chunks: int = 20

    @property
    def _llm_type(self) -> str:
        return "scripted-benchmark"

    def bind_tools(self, tools, **kwargs):
        return self  # the script already knows its one tool

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise NotImplementedError("the benchmark streams")

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        for i in range(self.chunks):
            yield ChatGenerationChunk(message=AIMessageChunk(content=chunk_text(turn, i)))
        if turn < TURNS - 1:
            yield ChatGenerationChunk(message=AIMessageChunk(
                content="",
                tool_call_chunks=[{"name": "add", "args": add_args_json(turn),
                                   "id": f"call_{turn}", "index": 0}],
                chunk_position="last",
            ))


async def make(chunks: int):
    counter = ToolCounter()

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return counter.add(a, b)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(ScriptedChatModel(chunks=chunks), [add], prompt="Be brief.")
    inputs = {"messages": [("user", PROMPT)]}
    config = {"recursion_limit": 4 * TURNS}
    last_chunk = chunk_text(TURNS - 1, chunks - 1)

    async def run() -> Outcome:
        counter.count = 0
        seen = 0
        last = None
        async for message, metadata in graph.astream(inputs, config, stream_mode="messages"):
            if isinstance(message, AIMessageChunk) and message.content:
                seen += 1
                last = message.content
        assert last == last_chunk, last
        return Outcome(text_chunks=seen, tool_calls=counter.count)

    return run


if __name__ == "__main__":
    main("langgraph", make)
