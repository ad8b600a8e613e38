"""The arknb side of the shared workload: the script, the tool and one streamed run.

Every arknb subject builds a fresh ``ScriptedModel`` and ``AgentRuntime`` per run
(untimed, see ``workload.py``): a scripted model is consumed by the run, and a runtime
keeps its session history, so reusing either would change the workload.
"""

from __future__ import annotations

import time

import arknb as ark

from workload import add_args_json, PROMPT, TOOL_CALLS, TURNS, Outcome, ToolCounter, chunk_text

__all__ = ["HOOK_SLOTS", "ModelBuildTimer", "make_tool", "script", "stream_run"]

HOOK_SLOTS = (
    "before_run", "before_model_call", "on_model_chunk", "after_model_call",
    "before_tool_call", "after_tool_call", "on_turn_completion", "before_persist_state",
    "after_persist_state", "after_run",
)


class ModelBuildTimer:
    """Records what building the ScriptedModel costs (it happens outside the timed
    run, while the peers' models build their stream events inside it)."""

    def __init__(self) -> None:
        self.samples: list[int] = []

    def script(self, chunks: int) -> ark.ScriptedModel:
        t0 = time.perf_counter_ns()
        model = script(chunks)
        self.samples.append(time.perf_counter_ns() - t0)
        return model

    def extras(self) -> dict:
        if not self.samples:
            return {}
        ordered = sorted(self.samples)
        return {"model_build_us": ordered[len(ordered) // 2] / 1000}


def script(chunks: int) -> ark.ScriptedModel:
    turns = [
        ark.ScriptedTurn(
            text=[chunk_text(t, i) for i in range(chunks)],
            tool_calls=[ark.ToolCall(id=f"call_{t}", name="add", arguments_json=add_args_json(t))],
        )
        for t in range(TOOL_CALLS)
    ]
    turns.append(ark.ScriptedTurn(text=[chunk_text(TURNS - 1, i) for i in range(chunks)]))
    return ark.ScriptedModel(turns)


def make_tool(counter: ToolCounter):
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return counter.add(a, b)

    return add


async def stream_run(runtime, counter: ToolCounter, chunks: int) -> Outcome:
    """One run consumed the way a notebook user would: iterate ``run_stream``."""
    counter.count = 0
    seen = 0
    success = False
    chunk_type = ark.EventTypes.LLM_CHUNK
    success_type = ark.EventTypes.AGENT_SUCCESS
    async for event in runtime.run_stream(PROMPT):
        etype = event.type
        if etype == chunk_type:
            if event.payload.get("kind", "text") == "text":
                seen += 1
        elif etype == success_type:
            success = True
    if not success:
        raise AssertionError("the run did not end with agent.success")
    return Outcome(text_chunks=seen, tool_calls=counter.count)
