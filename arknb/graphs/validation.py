"""The checks a graph passes before it runs, each failure naming the node at fault.

* every edge and declared route target names a node (or ``START`` / ``END``);
* ``START`` has a way out;
* every node can be reached from ``START``;
* no cycle is closed: a group of nodes that reach each other must have a way out,
  through a route or an edge leaving the group; otherwise the run could never end.

A route without declared ``targets`` (nor a ``Literal`` return annotation) may go
anywhere, so the checks assume it reaches every node and ``END``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arknb.domain import ArkError, ErrorCode, ErrorLayer

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["check_graph"]


def _invalid(graph: Graph, message: str) -> ArkError:
    return ArkError(ErrorLayer.CONFIG, ErrorCode.GRAPH_INVALID, f"graph {graph.name!r}: {message}")


def check_graph(graph: Graph) -> None:
    from ._engine import END, START
    names = set(graph.nodes)
    known = names | {START, END}
    if not graph.nodes:
        raise _invalid(graph, "it has no nodes; add one with @g.node, g.agent, g.human or g.map")
    for source, target in graph.edges:
        for end, name in (("from", source), ("to", target)):
            if name not in known:
                raise _invalid(graph, f"an edge {end} {name!r} names no node ({_choices(graph)})")
    for source, (_, targets) in graph.routes.items():
        if source not in names:
            raise _invalid(graph, f"a route leaves {source!r}, which is not a node ({_choices(graph)})")
        for target in targets or ():
            if target not in known:
                raise _invalid(graph, f"the route after {source!r} may go to {target!r}, which is not a node "
                                      f"({_choices(graph)})")
    out: dict[str, set[str]] = {name: set() for name in known}
    for source, target in graph.edges:
        out[source].add(target)
    for source, (_, targets) in graph.routes.items():
        out[source].update(targets if targets is not None else known - {START})
    if not out[START]:
        raise _invalid(graph, "nothing leaves START; add g.edge(ark.START, <first node>)")
    reached = _reachable(out, START)
    for name in graph.nodes:
        if name not in reached:
            raise _invalid(graph, f"node {name!r} cannot be reached from START; add an edge or a route to it")
    # A node with no way out ends its branch. A cycle must have a way out somewhere.
    for group in _cycles(out, names):
        exits = any(target not in group for name in group for target in out[name]) or \
            any(graph.routes.get(name, (None, ()))[1] is None for name in group if name in graph.routes)
        if not exits:
            first = sorted(group)[0]
            raise _invalid(graph, f"nodes {', '.join(sorted(group))} form a cycle with no way out (starting at "
                                  f"{first!r}); add a route that can leave it (g.route({first!r}, ...)) or an edge out")


def _choices(graph: Graph) -> str:
    return "nodes: " + ", ".join(sorted(graph.nodes)) + ", plus ark.START and ark.END"


def _reachable(out: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for target in out.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _cycles(out: dict[str, set[str]], names: set[str]) -> list[set[str]]:
    """The strongly connected groups of nodes that hold a cycle (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[set[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # graphs here are small: recursion depth is the node count
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in out.get(v, ()):
            if w not in names:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1 or v in out.get(v, ()):
                groups.append(group)

    for name in sorted(names):
        if name not in index:
            visit(name)
    return groups
