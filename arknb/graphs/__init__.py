"""Durable graphs (DESIGN §16, seed 004): workflows of function, agent, human and map nodes.

A graph drives runtimes and durable stores through their public seams, the way a user
would: an agent node is an :class:`~arknb.AgentRuntime` built by a factory, a step is
an :class:`~arknb.durable.Operation` of kind ``node`` on the store. Nothing in the core
imports this package.
"""

from ._engine import END, START
from .graph import Graph
from .nodes import NodeContext
from .plan_execute import PlanAndExecute, PlanState
from .reducers import append
from .run import GraphController, GraphRun, GraphStatus, PendingStep

__all__ = ["END", "START", "Graph", "GraphController", "GraphRun", "GraphStatus", "NodeContext", "PendingStep",
           "PlanAndExecute", "PlanState", "append"]
