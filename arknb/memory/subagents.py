"""Sub-agents (DESIGN §14): named child runtimes the model can hand a task to.

``AgentRuntime(..., subagents=[ark.SubAgent(...), ...])`` gives the model a
``delegate_task(agent, task)`` tool (see :mod:`arknb.memory.delegation`). Each delegation
builds a child with ``runtime_factory(session_id)`` under its own session id,
``{parent_session}.{name}.{n}``, runs ``task`` in it and answers the call with the
child's final text.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Awaitable, Callable, Iterable

from ..domain import invalid_argument


__all__ = ["SubAgent"]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")

RuntimeFactory = Callable[[str], Any] | Callable[[str], Awaitable[Any]]


class SubAgent:
    """A child agent the model may delegate to.

    Args:
        name: how the model names it in ``delegate_task`` (letters, digits, ``_``, ``-``;
            also the middle part of the child's session id and the prefix of its
            approvals' ids at the parent, ``{name}/{approval_id}``).
        description: what it is good at, shown to the model in the tool's description.
        runtime_factory: ``runtime_factory(session_id) -> AgentRuntime`` (sync or async)
            builds the child for that session id. To continue a delegation after a
            restart it is called again with the same id, so give the child a storage
            that outlives the process (the parent's is a good choice).
        output_type: the type of the child's answer (DESIGN §17): the child is asked for a
            typed answer, and ``delegate_task`` answers the parent with its JSON. A
            :meth:`clone` takes it as ``output_type=`` too.

    Example:
        >>> researcher = ark.SubAgent("researcher", "Finds facts in the docs.",
        ...     lambda sid: ark.AgentRuntime(model, tools=[search], storage=storage, session_id=sid))  # doctest: +SKIP
        >>> helper = ark.SubAgent.clone("helper", "Does a side task with my tools.")                  # doctest: +SKIP
    """

    def __init__(self, name: str, description: str, runtime_factory: RuntimeFactory, *,
                 output_type: Any = None) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise invalid_argument(f"SubAgent name must be 1-32 letters, digits, '_' or '-', starting with a letter "
                                   f"(it becomes part of session and approval ids), got {name!r}")
        if not isinstance(description, str) or not description.strip():
            raise invalid_argument(f"SubAgent {name!r} needs a description: it tells the model when to delegate")
        if not callable(runtime_factory):
            raise invalid_argument(f"SubAgent {name!r}: runtime_factory must be callable as "
                                   f"runtime_factory(session_id), got {type(runtime_factory).__name__}")
        self.name = name
        self.description = description.strip()
        self.runtime_factory = runtime_factory
        self.output_type = output_type
        self._clone: dict[str, Any] | None = None

    @classmethod
    def clone(cls, name: str, description: str, *, system_prompt: str | None = None,
              tools: Iterable[Any] | None = None, exclude_tools: Iterable[str] = (), **options: Any) -> SubAgent:
        """A sub-agent built like the runtime it is installed in: same model, tools, hooks,
        storage, config and approval policy (the extensions' built-in tools excluded).

        Args:
            system_prompt: its own system prompt (default: the parent's).
            tools: its tools instead of the parent's.
            exclude_tools: names of the parent's tools it must not have.
            **options: any other ``AgentRuntime`` option to set differently (``max_turns=``,
                ``model=``, ``compressor=``, ...).
        """
        if "session_id" in options or "state" in options:
            raise invalid_argument("SubAgent.clone: the child's session id is chosen per delegation "
                                   "({parent}.{name}.{n}); do not pass session_id= or state=")
        excluded = tuple(exclude_tools)
        if not all(isinstance(n, str) for n in excluded):
            raise invalid_argument("SubAgent.clone: exclude_tools must be tool names")
        agent = cls(name, description, _unbound, output_type=options.pop("output_type", None))
        agent._clone = {"system_prompt": system_prompt, "tools": None if tools is None else list(tools),
                        "exclude_tools": excluded, "options": dict(options)}
        return agent

    @property
    def is_clone(self) -> bool:
        """True for :meth:`clone` sub-agents (built from the parent's options)."""
        return self._clone is not None

    async def build(self, session_id: str, parent_options: dict[str, Any]) -> Any:
        """The child runtime for ``session_id`` (what a delegation calls)."""
        from ..runtime import AgentRuntime  # the public runtime; imported here to keep this module light

        if self._clone is None:
            child = self.runtime_factory(session_id)
            if inspect.isawaitable(child):
                child = await child
        else:
            options = dict(parent_options)
            spec = self._clone
            if spec["system_prompt"] is not None:
                options["system_prompt"] = spec["system_prompt"]
            if spec["tools"] is not None:
                options["tools"] = spec["tools"]
            excluded = set(spec["exclude_tools"])
            if excluded:
                options["tools"] = [t for t in options["tools"] if getattr(t, "name", None) not in excluded]
            options.update(spec["options"])
            model = options.pop("model")
            child = AgentRuntime(model, session_id=session_id, **options)
        if not isinstance(child, AgentRuntime):
            raise invalid_argument(f"SubAgent {self.name!r}: runtime_factory returned {type(child).__name__}, "
                                   "not an AgentRuntime")
        if child.session_id != session_id:
            raise invalid_argument(f"SubAgent {self.name!r}: runtime_factory({session_id!r}) built a runtime for "
                                   f"session {child.session_id!r}; pass session_id=session_id to AgentRuntime")
        # The child inherits its parent's secrets (the ones given and the keys learnt):
        # what it publishes and saves, and what it hands back, never holds them.
        for secret in parent_options.get("secrets", ()):
            child.secret_lint.add(secret)
        if self.output_type is not None:
            child.output_type = self.output_type  # its runs (and a resumed one) answer with this type
        return child

    def __repr__(self) -> str:
        kind = "clone" if self._clone is not None else "factory"
        return f"SubAgent({self.name!r}, {kind})"


def _unbound(session_id: str) -> Any:
    raise invalid_argument("a SubAgent.clone is built from the runtime it is installed in (subagents=[...])")


