"""Widgets release their bus listeners: on close, on garbage collection, and when a
re-run of the cell that made them replaces them (issue 15 item 2). Every widget that
listens to a runtime is in ``LIVE_WIDGETS``: a new one (a plan card, a sub-agent
card) joins the list and gets every test here."""

import gc
import json
import os
import sys
import textwrap
import weakref

import comm
import ipywidgets
import pytest

from arknb.events import AgentEvent
from arknb.widgets import ChatWidget, TimelineWidget
from arknb.widgets._base import CELLS, BusListener, CellWidgets, RuntimeWidget

from .conftest import FakeRuntime

LIVE_WIDGETS = [ChatWidget, TimelineWidget]
live_widget = pytest.mark.parametrize("make", LIVE_WIDGETS, ids=lambda cls: cls.__name__)


def listeners(bus) -> int:
    return sum(len(entries) for entries in bus._by_type.values())


@pytest.fixture
def cell(monkeypatch):
    """Pretend to be a kernel running notebook cells: ``cell.run(cell_id)`` starts a new execution."""
    class Cells:
        current = None
        count = 0

        def run(self, cell_id):
            self.count += 1
            self.current = (cell_id, f"msg-{self.count}")

    cells = Cells()
    monkeypatch.setattr(CELLS, "locate", lambda: cells.current)
    monkeypatch.setattr(CELLS, "_by_cell", {})
    return cells


def test_every_live_widget_is_a_runtime_widget_with_a_bundled_front_end():
    for cls in LIVE_WIDGETS:
        assert issubclass(cls, RuntimeWidget)
        # A str, not a path: anywidget watches a file path for changes for ever.
        assert isinstance(cls._esm, str) and isinstance(cls._css, str) and cls._esm.strip()


@live_widget
def test_close_releases_the_listener(make):
    rt = FakeRuntime()
    before = listeners(rt.bus)
    widget = make(rt)
    assert listeners(rt.bus) == before + 1 and widget.listening
    widget.close()
    assert listeners(rt.bus) == before and not widget.listening
    rt.bus.publish(AgentEvent("r1:1", "agent.started", "s", "r1", 1, 1.0, {}))  # reaches nobody, raises nothing
    assert rt.bus.listener_errors == 0


@live_widget
def test_a_collected_widget_takes_its_listener_with_it(make):
    rt = FakeRuntime()
    chat = make(rt)
    chat._repr_mimebundle_()  # shown: from now on ipywidgets holds it as any shown widget
    assert listeners(rt.bus) == 1
    # ipywidgets' registry and the kernel's comm manager hold every open widget; once both
    # let go of one (here: the front end closed its comm), nothing but the bus would hold
    # it, and the bus holds it only weakly.
    comm.get_comm_manager().comm_close(None, None, {"content": {"comm_id": chat.model_id, "data": {}}})
    ipywidgets.widgets.widget._instances.pop(chat.model_id)
    ref = weakref.ref(chat)
    del chat
    gc.collect()
    assert ref() is None
    assert listeners(rt.bus) == 0


@live_widget
def test_two_hundred_widgets_dropped_without_close_leave_no_listener(make):
    """Made and dropped without close(), never shown (a loop, a marimo cell re-run whose
    old element went): nothing holds them, so they go and take their listeners along."""
    rt = FakeRuntime()
    refs = [weakref.ref(make(rt)) for _ in range(200)]
    gc.collect()
    assert listeners(rt.bus) == 0
    assert sum(r() is not None for r in refs) == 0  # neither ipywidgets' registry nor the comm kept one


@live_widget
def test_a_shown_widget_stays_alive_and_a_message_still_reaches_an_unshown_one(make):
    rt = FakeRuntime()
    shown = make(rt)
    shown._repr_mimebundle_()
    ref = weakref.ref(shown)
    del shown
    gc.collect()
    assert ref() is not None and listeners(rt.bus) == 1  # a view may use it: ipywidgets holds it
    assert ipywidgets.widgets.widget._instances[ref().model_id] is ref()
    ref().close()
    unshown = make(rt)
    got = []
    unshown._handle_msg = got.append  # the comm's weak handler still delivers to a live widget
    unshown.comm.handle_msg({"content": {"data": {"method": "custom", "content": {}}}})
    assert len(got) == 1
    unshown.close()


@live_widget
def test_a_comm_closed_by_its_host_releases_the_widget(make):
    """marimo closes a re-run cell's comm without calling widget.close() (and gives the
    widget a comm of its own first): the widget stops listening and can be collected."""
    rt = FakeRuntime()
    widget = make(rt)
    widget.comm = comm.create_comm(target_name="jupyter.widget", data={"state": {}})  # the host's comm
    widget._repr_mimebundle_()  # the host shows it (marimo syncs its state this way)
    assert listeners(rt.bus) == 1
    widget.comm.close()  # the cell re-runs: the host disposes the comm
    assert listeners(rt.bus) == 0
    ref = weakref.ref(widget)
    del widget
    gc.collect()
    assert ref() is None


def test_bus_listener_never_keeps_its_owner_alive():
    rt = FakeRuntime()

    class Owner:
        seen = 0

        def _on_event(self, event):
            Owner.seen += 1

    owner = Owner()
    link = BusListener(rt.bus, owner, "_on_event")
    ref = weakref.ref(owner)
    del owner
    assert ref() is None and not link.active and listeners(rt.bus) == 0


@live_widget
def test_re_running_a_cell_replaces_its_widgets(cell, make):
    rt = FakeRuntime()
    widgets = []
    for _ in range(500):
        cell.run("cell-widget")
        widgets.append(make(rt))
    assert listeners(rt.bus) == 1
    assert all(w.comm is None and not w.listening for w in widgets[:-1]) and widgets[-1].comm is not None
    assert CELLS.cells() == {"cell-widget": 1}


@live_widget
def test_a_replaced_widget_is_collected(cell, make):
    rt = FakeRuntime()
    cell.run("cell-widget")
    ref = weakref.ref(make(rt))
    cell.run("cell-widget")
    keep = make(rt)
    gc.collect()
    assert ref() is None and keep.listening and listeners(rt.bus) == 1


def test_one_execution_may_make_several_widgets_and_other_cells_keep_theirs(cell):
    rt = FakeRuntime()
    cell.run("a")
    first, second = ChatWidget(rt), TimelineWidget(rt)
    cell.run("b")
    other = ChatWidget(rt)
    assert listeners(rt.bus) == 3
    cell.run("a")  # re-run a: both of its chats go, b's stays
    again = ChatWidget(rt)
    assert (first.comm, second.comm) == (None, None)
    assert other.listening and again.listening and listeners(rt.bus) == 2


def test_without_a_cell_id_nothing_is_replaced():
    registry = CellWidgets(locate=lambda: None)
    rt = FakeRuntime()
    chats = [ChatWidget(rt) for _ in range(3)]
    for c in chats:
        registry.claim(c)
    assert all(c.listening for c in chats)


KERNEL_CELL = textwrap.dedent("""
    chat, timeline = ChatWidget(rt), TimelineWidget(rt)
    display(chat, timeline)
""")


def test_five_hundred_re_runs_of_a_cell_in_a_real_kernel_leave_one_listener_per_widget(tmp_path):
    """A real ipykernel, driven as JupyterLab drives it: execute requests with a cellId."""
    jupyter_client = pytest.importorskip("jupyter_client")
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        def execute(code, cell_id):
            msg = kc.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                                     "user_expressions": {}, "allow_stdin": False,
                                                     "stop_on_error": True}, metadata={"cellId": cell_id})
            kc.shell_channel.send(msg)
            while True:
                reply = kc.get_shell_msg(timeout=60)
                if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                    assert reply["content"]["status"] == "ok", reply["content"]
                    return

        execute("import arknb as ark\nfrom arknb.widgets import ChatWidget, TimelineWidget\n"
                "rt = ark.AgentRuntime(ark.ScriptedModel(['hi']))", "setup")
        for _ in range(500):
            execute(KERNEL_CELL, "chat-cell")
        out = tmp_path / "count.json"
        execute(f"import json, pathlib\npathlib.Path({str(out)!r}).write_text(json.dumps("
                "sum(len(v) for v in rt.bus._by_type.values())))", "probe")
        assert json.loads(out.read_text()) == 2  # one chat and one timeline
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
