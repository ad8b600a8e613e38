"""The kinds of graph nodes and what a node is handed when it runs.

* :class:`FunctionNode`: a plain function, sync or async, ``fn(state)`` or
  ``fn(state, ctx)``, returning an update.
* :class:`AgentNode`: a whole :class:`~arknb.AgentRuntime` built by ``runtime_factory``
  (as for ``ark.SubAgent``) under its own session; its prompt comes from the state and
  its final text, or its typed answer (``output_type``), goes into one field.
* :class:`HumanNode`: a question to a person; their answer, checked against the
  node's type, goes into one field.
* :class:`MapNode`: one function applied to each item of a list taken from the state,
  up to ``limit`` at once; the results, in the items' order, go into one field.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from pydantic import TypeAdapter

from arknb.domain import ArkError, ErrorCode, ErrorLayer, invalid_argument

__all__ = ["AgentNode", "FunctionNode", "HumanNode", "MapNode", "Node", "NodeContext", "call_user"]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,47}$")


def check_name(name: object, what: str = "node") -> str:
    """``name`` if it can name a node (it becomes part of ids), else ``invalid_argument``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise invalid_argument(f"a graph {what} name is 1-48 letters, digits, '_' or '-', starting with a letter "
                               f"(it becomes part of step and session ids), got {name!r}")
    return name


@dataclass(frozen=True, slots=True)
class NodeContext:
    """What a node is told about the step it runs in.

    Attributes:
        graph: the graph's name.
        run_id: the graph run.
        node: this node's name.
        step: the superstep number (1 for the first step after ``START``).
        state_version: how many updates the state it was given has merged.
        idempotency_key: stable across restores (``{run_id}:{step}:{node}``, with
            ``[i]`` for a map item): hand it to a service that deduplicates.
        attempt: 1, or more when a restore runs an idempotent step again.
        item_index: a map item's position in the list (None outside a map).
    """

    graph: str
    run_id: str
    node: str
    step: int
    state_version: int
    idempotency_key: str
    attempt: int = 1
    item_index: int | None = None


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()  # (a defaulted one is not ctx)
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):
        return 1
    return 2 if len(params) >= 2 else 1


async def call_user(fn: Callable[..., Any], arg: Any, ctx: NodeContext, arity: int) -> Any:
    """Call a node's function (sync or async) with one or two arguments."""
    value = fn(arg, ctx) if arity == 2 else fn(arg)
    if inspect.isawaitable(value):
        value = await value
    return value


@dataclass(slots=True)
class Node:
    """What every node has: a name and whether running it twice is harmless."""

    name: str
    idempotent: bool = False

    kind = "node"


@dataclass(slots=True)
class FunctionNode(Node):
    """A function node: ``fn(state[, ctx]) -> update`` (sync or async)."""

    fn: Callable[..., Any] | None = None
    arity: int = 1
    kind = "function"

    @classmethod
    def of(cls, name: str, fn: Callable[..., Any], idempotent: bool) -> FunctionNode:
        if not callable(fn):
            raise invalid_argument(f"graph node {name!r} needs a function, got {type(fn).__name__}")
        return cls(name, idempotent, fn, _arity(fn))


@dataclass(slots=True)
class AgentNode(Node):
    """An agent node: ``runtime_factory(session_id)`` builds the runtime; ``prompt(state)``
    gives its input; its final text goes into ``output``, or its typed answer when
    ``output_type`` (or the runtime's own ``output_type``) asks for one."""

    runtime_factory: Callable[[str], Any] | None = None
    prompt: Callable[[Any], Any] | None = None
    output: str = ""
    output_type: Any = None
    kind = "agent"

    async def build(self, session_id: str) -> Any:
        runtime = self.runtime_factory(session_id)
        if inspect.isawaitable(runtime):
            runtime = await runtime
        return runtime


@dataclass(slots=True)
class HumanNode(Node):
    """A human node: ``ask(state)`` gives the question; the answer, validated against
    ``type``, goes into ``output``."""

    ask: Callable[[Any], Any] | None = None
    output: str = ""
    type: Any = str
    kind = "human"

    def validate(self, value: Any) -> Any:
        """The answer as the node's type, or ``human_answer_invalid`` naming the node."""
        try:
            return TypeAdapter(self.type).validate_python(value, strict=self.type is bool)
        except Exception as exc:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.HUMAN_ANSWER_INVALID,
                           f"human node {self.name!r} expects {_type_name(self.type)}, got {value!r}: "
                           f"{str(exc).splitlines()[-1].strip() if str(exc) else exc}") from None

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the answer (what the chat's form is built from)."""
        try:
            return TypeAdapter(self.type).json_schema()
        except Exception:
            return {}


@dataclass(slots=True)
class MapNode(Node):
    """A map node: ``fn(item[, ctx])`` for each item of ``over(state)``, at most ``limit``
    at once; the results, in the items' order, go into ``into``."""

    over: Callable[[Any], Any] | None = None
    fn: Callable[..., Any] | None = None
    into: str = ""
    limit: int = 4
    arity: int = 1
    kind = "map"


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


RuntimeFactory = Callable[[str], Any] | Callable[[str], Awaitable[Any]]
