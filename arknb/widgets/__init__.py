"""Jupyter widgets for arknb (anywidget): a chat and an event timeline.

Importing this package imports anywidget and ipywidgets; the core (``arknb.runtime``
and below) never imports it.
"""

from .chat import ChatWidget
from .graph import GraphWidget
from .timeline import TimelineWidget

__all__ = ["ChatWidget", "GraphWidget", "TimelineWidget"]
