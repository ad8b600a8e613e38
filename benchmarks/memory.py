"""Context compression and sub-agent costs (issue 14), measured side by side in one process.

1. **Compression decision per model call on a 1,000-message history.** The compressor's
   ``before_model_call`` work for one request, on a conversation that grows by two
   messages per call (as a run does), after its first compression (so the summary is
   reused and only the few newly overflowing messages are ever summarised):

   * ``cached``: the compressor as shipped (counts kept per message, matched by identity);
   * ``recount``: the same decision with a fresh count of every message each call (what a
     compressor without the per-message cache pays; the baseline the cache is against);
   * ``under_budget``: a request that fits (the common case before a conversation grows).

2. **Sub-agent overhead per delegation.** The ``delegate_task`` call's own duration (its
   ``tool.after`` ``duration_ms``: slice record, child built by the factory, loaded,
   events re-published, run, answer) against running the same child directly (build +
   ``run``), interleaved.

    .venv/bin/python benchmarks/memory.py [--calls 200] [--delegations 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arknb as ark  # noqa: E402
from arknb import AgentMessage, ModelConfig, ModelRequest, ToolCall  # noqa: E402
from arknb.memory import ContextCompressor  # noqa: E402
from arknb.memory._view import MessageCosts  # noqa: E402
from arknb.memory.compressor import ContextExtension  # noqa: E402
from arknb.state import CONTEXT_SLICE, AgentState  # noqa: E402


class Scope:
    """The parts of an ExtensionScope the compressor uses."""

    def __init__(self) -> None:
        self.slice = None
        self.n = 0
        self.run_id = "run"
        self.model = None

    def set_slice(self, value) -> None:
        self.slice = value

    def emit(self, event_type, payload) -> None:
        pass

    def new_id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n}"

    def clock(self) -> float:
        return 0.0


def conversation(n: int) -> list[AgentMessage]:
    messages: list[AgentMessage] = []
    i = 0
    while len(messages) < n:
        messages.append(AgentMessage.user(f"question {i}: " + "please look at the logs and tell me " * 4))
        call = ToolCall(id=f"c{i}", name="read_logs", arguments_json=json.dumps({"service": f"svc{i}"}))
        messages.append(AgentMessage.assistant("Let me read them.", tool_calls=[call]))
        messages.append(AgentMessage.tool(f"c{i}", "12:00 ok\n12:01 slow request\n" * 6))
        messages.append(AgentMessage.assistant(f"Service svc{i} is slow at 12:01. " * 3))
        i += 1
    return messages[:n]


def summarize(messages) -> str:
    return f"{len(messages)} earlier messages about slow services."


async def decision_costs(calls: int, size: int) -> dict[str, list[float]]:
    system = AgentMessage.system("You are an SRE assistant.")
    history = conversation(size + 2 * calls + 2)
    samples: dict[str, list[float]] = {"cached": [], "recount": [], "under_budget": []}
    budget = 6_000
    shipped = ContextExtension(ContextCompressor(budget, summarize=summarize))
    recount = ContextExtension(ContextCompressor(budget, summarize=summarize))
    roomy = ContextExtension(ContextCompressor(10_000_000, summarize=summarize))
    scopes = {id(e): Scope() for e in (shipped, recount, roomy)}
    for extension in (shipped, recount, roomy):
        extension.setup(scopes[id(extension)])

    async def decide(extension: ContextExtension, upto: int) -> float:
        scope = scopes[id(extension)]
        state = AgentState(session_id="bench", history=tuple(history[:upto]),
                           extensions={CONTEXT_SLICE: scope.slice} if scope.slice else {})
        request = ModelRequest.model_construct(messages=(system, *state.history), tools=(), config=ModelConfig())
        t0 = time.perf_counter()
        await extension.compress(request, state, 1)
        return time.perf_counter() - t0

    # The first compression of each (summaries written), then the measured calls.
    for extension in (shipped, recount, roomy):
        await decide(extension, size)
    counted_before = shipped.costs.counted
    for k in range(calls):
        upto = size + 2 * (k + 1)
        # Interleaved in a rotating order, so drift hits all alike.
        order = [("cached", shipped), ("recount", recount), ("under_budget", roomy)]
        for name, extension in order[k % 3:] + order[:k % 3]:
            if name == "recount":
                # Forget every token count (the summaries' digest checks stay cached, as in
                # the shipped one: only counting differs).
                extension.costs = MessageCosts(extension.config.count_tokens)
            samples[name].append(await decide(extension, upto))
    samples["counted_per_call_cached"] = [(shipped.costs.counted - counted_before) / calls]
    return samples


async def delegation_costs(delegations: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"direct_child_run": [], "delegation": []}
    storage = ark.MemoryStateStorage()

    def child(session_id: str) -> ark.AgentRuntime:
        return ark.AgentRuntime(ark.ScriptedModel(["The answer is 42."]), storage=storage, session_id=session_id)

    agent = ark.SubAgent("worker", "Answers questions.", child)
    for i in range(delegations + 10):
        t0 = time.perf_counter()
        runtime = child(f"direct-{i}")
        await runtime.run("What is the answer?")
        direct = time.perf_counter() - t0

        model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ToolCall(
            id="d1", name="delegate_task", arguments_json=json.dumps({"agent": "worker", "task": "What is the answer?"}))]),
            "42."])
        parent = ark.AgentRuntime(model, storage=storage, session_id=f"parent-{i}", subagents=[agent])
        durations: list[float] = []
        parent.bus.subscribe(ark.EventTypes.TOOL_AFTER, lambda e: durations.append(e.payload["duration_ms"] / 1000))
        await parent.run("Ask the worker.")
        if i >= 10:  # warm-up
            samples["direct_child_run"].append(direct)
            samples["delegation"].append(durations[0])
    return samples


def median_us(values: list[float]) -> float:
    return statistics.median(values) * 1e6


async def main(calls: int, delegations: int, size: int) -> None:
    decisions = await decision_costs(calls, size)
    cached, recount, roomy = (median_us(decisions[k]) for k in ("cached", "recount", "under_budget"))
    print(f"## Compression decision per model call, {size:,}-message history ({calls} calls, medians)\n")
    print("| variant | µs per call | vs recount |")
    print("|---|---:|---:|")
    print(f"| cached (shipped) | {cached:,.0f} | {cached / recount:.2f}x |")
    print(f"| recount every message (baseline) | {recount:,.0f} | 1.00x |")
    print(f"| under budget (no compression) | {roomy:,.0f} | {roomy / recount:.2f}x |")
    print(f"\nmessages counted per call by the shipped compressor: "
          f"{decisions['counted_per_call_cached'][0]:.1f}\n")
    costs = await delegation_costs(delegations)
    direct, delegated = median_us(costs["direct_child_run"]), median_us(costs["delegation"])
    print(f"## Sub-agent overhead per delegation ({delegations} delegations, medians)\n")
    print("| variant | µs | vs direct |")
    print("|---|---:|---:|")
    print(f"| direct child run (build + run) | {direct:,.0f} | 1.00x |")
    print(f"| delegate_task call (same child) | {delegated:,.0f} | {delegated / direct:.2f}x |")
    print(f"\noverhead per delegation: {delegated - direct:,.0f} µs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--delegations", type=int, default=200)
    parser.add_argument("--size", type=int, default=1_000)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.delegations, args.size))
