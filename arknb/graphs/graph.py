"""``ark.Graph``: a workflow of function, agent, human and map nodes over a typed state.

Example (DESIGN §16)::

    class Triage(BaseModel):
        question: str
        notes: Annotated[list[str], ark.append] = []
        approved: bool | None = None

    g = ark.Graph("triage", state=Triage)

    @g.node
    async def research(state: Triage, ctx: ark.NodeContext) -> dict:
        return {"notes": f"found something about {state.question}"}

    g.agent("answer", runtime_factory, prompt=lambda s: s.question, output="notes")
    g.human("review", ask=lambda s: f"Publish {s.notes[-1]!r}?", output="approved")
    g.edge(ark.START, "research"); g.edge("research", "answer"); g.edge("answer", "review")
    g.route("review", lambda s: ark.END if s.approved else "research")

    run = await g.run(Triage(question="..."), storage=ark.SQLiteStore("arknb.sqlite3"), run_id="t1")
    run.status, run.state

The graph is checked when it first runs (or by :meth:`Graph.validate`): every edge
names a node, every node can be reached from ``START``, and no cycle lacks a way out
through a route. A route returning ``None`` or a name the graph does not have fails
the run with an error naming the route's node.
"""

from __future__ import annotations

import types
import typing
import uuid
import weakref
from typing import Any, Callable, Iterable

from pydantic import BaseModel

from arknb.domain import ArkError, ErrorCode, ErrorLayer, invalid_argument
from arknb.state import StateStorage, validate_session_id
from arknb.state.storage import storage_location

from ._engine import END, START, Engine
from ._log import graph_session, log_for
from .nodes import AgentNode, FunctionNode, HumanNode, MapNode, Node, check_name
from .run import GraphRun, GraphStatus
from .validation import check_graph

__all__ = ["END", "START", "Graph"]

_GRAPHS: dict[str, "Graph"] = {}  # by name, the latest defined (re-running a cell replaces it)
_LIVE: dict[Any, "weakref.ref[Engine]"] = {}


class _either:
    """A method that works on the class (``Graph.restore``: the graph is found by the
    name saved with the run) and on an instance (``g.restore``)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, owner: type) -> Callable[..., Any]:
        def bound(*args: Any, **kwargs: Any) -> Any:
            return self.fn(owner, obj, *args, **kwargs)
        bound.__doc__ = self.fn.__doc__
        return bound


class Graph:
    """A graph of nodes over a pydantic state model.

    Args:
        name: the graph's name (restores find the graph of a saved run by it).
        state: the pydantic model of the graph's state. A field annotated
            ``Annotated[list[X], ark.append]`` (or any two-argument reducer) is merged
            with it instead of replaced.
        max_parallel: how many nodes of one step (parallel branches: several edges out
            of a node, a route returning several names) run at once; None: all. A map
            node has its own ``limit``.
    """

    def __init__(self, name: str, *, state: type[BaseModel], max_parallel: int | None = None) -> None:
        self.name = check_name(name, "graph")
        if max_parallel is not None and (isinstance(max_parallel, bool) or not isinstance(max_parallel, int)
                                         or max_parallel < 1):
            raise invalid_argument(f"Graph {name!r}: max_parallel must be a positive int or None, got {max_parallel!r}")
        self.max_parallel = max_parallel
        if not (isinstance(state, type) and issubclass(state, BaseModel)):
            raise invalid_argument(f"Graph {name!r}: state= takes a pydantic model class, got {state!r}")
        self.state_model = state
        self.nodes: dict[str, Node] = {}
        self.edges: list[tuple[str, str]] = []
        self.routes: dict[str, tuple[Callable[[Any], Any], tuple[str, ...] | None]] = {}
        _GRAPHS[name] = self

    # -- building ------------------------------------------------------------------

    def _add(self, node: Node) -> None:
        if node.name in (START, END):
            raise invalid_argument(f"{node.name!r} is reserved for ark.START / ark.END")
        self.nodes[node.name] = node  # re-running a notebook cell replaces the node

    def node(self, fn: Callable[..., Any] | None = None, *, name: str | None = None,
             idempotent: bool = False) -> Any:
        """Add a function node (a decorator): ``fn(state)`` or ``fn(state, ctx)``, sync or
        async, returning an update (a dict, a model, or None).

        ``idempotent=True`` lets a restore run it again when a crash interrupted it; otherwise
        that step is in doubt and waits for a person.
        """
        def add(f: Callable[..., Any]) -> Callable[..., Any]:
            self._add(FunctionNode.of(check_name(name or getattr(f, "__name__", "")), f, bool(idempotent)))
            return f
        return add(fn) if fn is not None else add

    def agent(self, name: str, runtime_factory: Callable[[str], Any], *, prompt: Callable[[Any], Any],
              output: str, idempotent: bool = False, output_type: Any = None) -> None:
        """Add an agent node: ``runtime_factory(session_id)`` (sync or async, like
        ``ark.SubAgent``) builds an :class:`~arknb.AgentRuntime` for the node's own session
        (``graph.{run_id}.{node}.{step}``); ``prompt(state)`` is its input; its answer
        goes into the field ``output``: the final text, or the typed answer
        (``result.output``, DESIGN §17) when ``output_type`` is given here or the runtime
        declares one, validated by the state model like any update. Give the runtime a
        storage that outlives the process (the graph's) so a restore resumes it."""
        if not callable(runtime_factory) or not callable(prompt):
            raise invalid_argument(f"agent node {name!r} needs runtime_factory and prompt callables")
        if output_type is not None:
            from arknb.runtime.output import OutputSpec
            OutputSpec.of(output_type)  # refused now, not when the node runs
        self._add(AgentNode(check_name(name), bool(idempotent), runtime_factory, prompt, self._field(output, name),
                            output_type))

    def human(self, name: str, *, ask: Callable[[Any], Any] | str, output: str, type: Any = None) -> None:
        """Add a human node: the run waits for a person's answer to ``ask(state)``;
        the answer (checked against ``type``, by default the ``output`` field's type)
        goes into the field ``output``."""
        question = ask if callable(ask) else (lambda _s, text=str(ask): text)
        field = self._field(output, name)
        answer_type = type if type is not None else _answer_type(self.state_model, field)
        self._add(HumanNode(check_name(name), False, question, field, answer_type))

    def map(self, name: str, *, over: Callable[[Any], Iterable[Any]], node: Callable[..., Any], into: str,
            limit: int = 4, idempotent: bool = False) -> None:
        """Add a map node: ``node(item)`` (or ``node(item, ctx)``) for each item of
        ``over(state)``, at most ``limit`` at once; the results, in the items' order, go
        into the field ``into`` (through its reducer, if it has one)."""
        if not callable(over) or not callable(node):
            raise invalid_argument(f"map node {name!r} needs over= and node= callables")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise invalid_argument(f"map node {name!r}: limit must be a positive int, got {limit!r}")
        from .nodes import _arity
        self._add(MapNode(check_name(name), bool(idempotent), over, node, self._field(into, name), limit, _arity(node)))

    def edge(self, source: str, target: str) -> None:
        """Go from ``source`` (or ``START``) to ``target`` (or ``END``) after ``source`` ran."""
        if not isinstance(source, str) or not isinstance(target, str):
            raise invalid_argument("edge() takes two node names")
        if source == END or target == START:
            raise invalid_argument(f"edge({source!r}, {target!r}): nothing leaves END and nothing enters START")
        if (source, target) not in self.edges:
            self.edges.append((source, target))

    def route(self, source: str, fn: Callable[[Any], Any], *, targets: Iterable[str] | None = None) -> None:
        """After ``source`` ran, go where ``fn(state)`` says: a node name, ``END``, or a
        list of names (run together). ``targets`` (or a ``Literal[...]`` return
        annotation) lists where it may go, for drawing and for the build checks."""
        if not callable(fn):
            raise invalid_argument(f"route from {source!r} needs a callable")
        names = tuple(targets) if targets is not None else _literal_targets(fn)
        self.routes[source] = (fn, names)

    def _field(self, name: str, node: str) -> str:
        if name not in self.state_model.model_fields:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.GRAPH_INVALID,
                           f"node {node!r} writes field {name!r}, which {self.state_model.__name__} does not have "
                           f"(fields: {', '.join(self.state_model.model_fields)})")
        return name

    # -- checks and the next step ------------------------------------------------------

    def validate(self) -> Graph:
        """Check the graph (see the module docstring); returns it.

        Raises:
            ArkError: ``graph_invalid`` naming the node at fault.
        """
        check_graph(self)
        return self

    def successors(self, node: str, state: BaseModel) -> list[str]:
        """Where the run goes after ``node`` with ``state``: its edges, then its route."""
        out = [target for source, target in self.edges if source == node]
        route = self.routes.get(node)
        if route is not None:
            chosen = route[0](state)
            names = list(chosen) if isinstance(chosen, (list, tuple)) else [chosen]
            if not names:
                names = [None]
            for name in names:
                if name != END and name not in self.nodes:
                    error = ArkError(ErrorLayer.RUNTIME, ErrorCode.GRAPH_ROUTE_INVALID,
                                     f"the route after node {node!r} returned {name!r}, which is not a node of graph "
                                     f"{self.name!r}; return one of {', '.join(sorted(self.nodes))} or ark.END")
                    error.node = node
                    raise error
                if name not in out:
                    out.append(name)
        return out

    def describe(self) -> dict[str, Any]:
        """The graph as data (what the drawing lays out)."""
        edges = [{"source": s, "target": t, "kind": "edge"} for s, t in self.edges]
        for source, (_, targets) in self.routes.items():
            for target in targets or ("?",):
                edges.append({"source": source, "target": target, "kind": "route"})
        return {"name": self.name, "nodes": [{"name": n.name, "kind": n.kind} for n in self.nodes.values()],
                "edges": edges}

    def _repr_html_(self) -> str:
        from .drawing import graph_svg
        return graph_svg(self.describe())

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, state={self.state_model.__name__}, nodes={list(self.nodes)})"

    # -- running ----------------------------------------------------------------------

    async def run(self, state: BaseModel | dict[str, Any], *, storage: StateStorage | None = None,
                  run_id: str | None = None, fresh: bool = False) -> GraphRun:
        """Run the graph from ``state`` until it finishes, fails or waits for a person.

        Args:
            storage: where each step is saved: a durable store (``SQLiteStore``,
                ``PostgresStore``) makes every step an operation and a crash resumable
                with :meth:`restore`; a plain ``StateStorage`` (``MemoryStateStorage``,
                ``FileStateStorage``) works too but is not crash-safe (no lease; a step
                that began is not told apart from one that finished the way operations
                tell it); None keeps the run in this process only.
            run_id: the run's id (default: a new one). A saved run with this id is
                refused unless ``fresh=True``, which deletes it first.
        """
        run = await self.start(state, storage=storage, run_id=run_id, fresh=fresh)
        return await run.wait()

    async def start(self, state: BaseModel | dict[str, Any], *, storage: StateStorage | None = None,
                    run_id: str | None = None, fresh: bool = False) -> GraphRun:
        """Like :meth:`run`, but return at once with the run going on in the background
        (what a widget needs: the cell returns and the buttons stay live)."""
        self.validate()
        if not isinstance(state, self.state_model):
            state = self.state_model.model_validate(state)
        run_id = run_id or f"gr_{uuid.uuid4().hex[:12]}"
        validate_session_id(graph_session(run_id))
        engine = await _open(self, storage, run_id, takeover=False)
        if engine.saved is not None:
            if not fresh:
                await engine.close()
                raise invalid_argument(f"graph run {run_id!r} is already saved in {storage!r} (status "
                                       f"{engine.saved.get('status')}); continue it with Graph.restore({run_id!r}, "
                                       "storage=...), or pass fresh=True to start it over")
            await storage.delete(engine.log.session_id)
            engine.log.revision = 0
            engine.log.sequence = 0
        await engine.begin(state)
        engine.start()
        return GraphRun(self, engine)

    @_either
    async def restore(cls, graph: Graph | None, run_id: str, *, storage: StateStorage, takeover: bool = False,
                      **graphs: Any) -> GraphRun:
        """Reopen a saved graph run and continue it (``await ark.Graph.restore(run_id,
        storage=...)`` finds the graph by its saved name among the graphs defined in
        this process; ``g.restore(...)`` uses ``g``).

        Finished steps are reused, never re-run; an agent node resumes its session; a
        function node that began is in doubt (``run.controller.list_in_doubt()``) unless
        idempotent; a human node still waits. On a durable store the run's lease is
        taken first: ``session_locked`` while another live process holds it, unless
        ``takeover=True``.

        Raises:
            ArkError: ``graph_run_not_found``; ``session_locked``; ``graph_invalid`` if
                no graph of the saved name is defined.
        """
        if storage is None:
            raise invalid_argument("restore() needs the storage the graph run was saved to")
        engine = await _open(graph, storage, run_id, takeover=takeover)
        saved = engine.saved
        if saved is None:
            await engine.close()
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.GRAPH_RUN_NOT_FOUND,
                           f"no saved graph run {run_id!r} in {storage!r}")
        if graph is None:
            graph = _GRAPHS.get(saved["graph"])
            if graph is None:
                await engine.close()
                raise ArkError(ErrorLayer.CONFIG, ErrorCode.GRAPH_INVALID,
                               f"graph run {run_id!r} belongs to graph {saved['graph']!r}, which is not defined in this "
                               "process: run the cell that builds it, then restore")
            engine.graph = graph
        graph.validate()
        engine.load(saved)
        if engine.status is GraphStatus.RUNNING or engine.status is GraphStatus.AWAITING_HUMAN:
            engine.status = GraphStatus.RUNNING
            engine.pending = []
            engine.start()
            run = GraphRun(graph, engine)
            await run.wait()
            return run
        await engine.close()
        return GraphRun(graph, engine)


async def _open(graph: Graph | None, storage: Any, run_id: str, *, takeover: bool) -> Engine:
    """An engine owning the run's session; an older engine of this process on it is closed."""
    session = validate_session_id(graph_session(run_id))
    if storage is None:
        engine = Engine(graph, log_for(None, session), run_id)
        engine.saved = None
        return engine
    place = (storage_location(storage), session)
    old = _LIVE.get(place)
    old_engine = old() if old is not None else None
    if old_engine is not None and not old_engine.closed:
        if old_engine.task is not None and not old_engine.task.done():
            old_engine.task.cancel()
            try:
                await old_engine.task
            except BaseException:
                pass
        await old_engine.close()
    engine = Engine(graph, log_for(storage, session), run_id)
    engine.saved = await engine.log.open(takeover=takeover)
    _LIVE[place] = weakref.ref(engine)
    return engine


def _answer_type(model: type[BaseModel], field: str) -> Any:
    annotation = model.model_fields[field].annotation
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]  # bool | None: a person answers a bool
    return annotation


def _literal_targets(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    try:
        hint = typing.get_type_hints(fn).get("return")
    except Exception:
        return None
    if typing.get_origin(hint) is typing.Literal:
        return tuple(str(a) for a in typing.get_args(hint))
    return None
