"""A suite file for the CLI tests: its cassette and expected answer come from the environment."""

import os

import arknb as ark
import arknb.eval as ev


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


EXPECT = os.environ["ARKNB_TEST_EXPECT"]

cases = [
    ev.Case("sum", "What is 1 + 2?", graders=[ev.contains(EXPECT)]),
    ev.Case("uses the tool", "What is 1 + 2?", graders=[ev.tool_called("add", {"a": 1})]),
]


def make_runtime(case):
    return ark.AgentRuntime(ev.ReplayModel(os.environ["ARKNB_TEST_CASSETTE"]), tools=[add])
