import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["arknb.runtime", "arknb.events", "arknb.domain"])
def test_core_never_imports_the_widget_stack(module):
    code = (f"import importlib, sys\n"
            f"try:\n    importlib.import_module({module!r})\n"
            f"except ModuleNotFoundError as exc:\n"
            f"    if exc.name != {module!r}: raise\n"
            f"    print('absent')\n"
            f"bad = [m for m in ('anywidget', 'ipywidgets', 'arknb.widgets') if m in sys.modules]\n"
            f"assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_widgets_package_exports_both_widgets():
    import arknb.widgets as w

    assert w.__all__ == ["ChatWidget", "GraphWidget", "TimelineWidget"]
    from arknb.widgets._base import STATIC

    for name in ("chat.js", "chat.css", "timeline.js", "timeline.css", "graph.js", "graph.css"):
        assert (STATIC / name).stat().st_size > 1000, name
    assert "export" in str(w.ChatWidget._esm) and "arknb-timeline" in str(w.TimelineWidget._esm)


def test_widgets_refuse_what_is_neither_a_runtime_nor_events():
    import pytest

    import arknb as ark
    cases = [(lambda: ark.ChatWidget("x"), "AgentRuntime"), (lambda: ark.TimelineWidget(5), "events"),
             (lambda: ark.ChatWidget.from_events(5), "events"), (lambda: ark.TimelineWidget(["x"]), "events[0]")]
    for make, named in cases:
        with pytest.raises(ark.ArkError) as info:
            make()
        assert info.value.code == "invalid_argument" and named in info.value.message
