"""Subject (g): pydantic-ai with ``FunctionModel(stream_function=...)``.

The stream function yields 20 ``str`` chunks then one ``DeltaToolCalls`` for ``add``
(the last turn: 20 chunks only). Consumed via ``Agent.run_stream_events``; a text
chunk reaches the consumer as a ``PartStartEvent`` (first) or ``PartDeltaEvent``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import add_args_json, PROMPT, TURNS, Outcome, ToolCounter, chunk_text, main  # noqa: E402

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel  # noqa: E402


async def make(chunks: int):
    counter = ToolCounter()

    async def stream(messages, info: AgentInfo):
        turn = sum(1 for m in messages if isinstance(m, ModelResponse))
        for i in range(chunks):
            yield chunk_text(turn, i)
        if turn < TURNS - 1:
            yield {0: DeltaToolCall(name="add", json_args=add_args_json(turn), tool_call_id=f"call_{turn}")}

    agent = Agent(FunctionModel(stream_function=stream), instructions="Be brief.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return counter.add(a, b)

    async def run() -> Outcome:
        counter.count = 0
        seen = 0
        output = None
        async with agent.run_stream_events(PROMPT) as events:
            async for event in events:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    seen += 1
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    seen += 1
                elif hasattr(event, "result"):
                    output = event.result.output
        assert output is not None and output.endswith(chunk_text(TURNS - 1, chunks - 1)), output
        return Outcome(text_chunks=seen, tool_calls=counter.count)

    return run


if __name__ == "__main__":
    main("pydantic-ai", make)
