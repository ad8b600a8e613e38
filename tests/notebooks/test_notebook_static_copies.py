"""Shared notebooks read well without a kernel (issue 25 item 5): every committed tutorial
carries its executed outputs, and each cell that shows a live chat or timeline carries the
widget's static copy (its companion output), so GitHub, nbviewer and nbconvert HTML show
the conversation; no output prints a bare ``<... object at 0x…>`` repr.

``TUTORIALS`` is every ``notebooks/NN_*.ipynb``: a new tutorial is checked without
touching this file. ``LIVE_WIDGET_LINE`` names what a cell's last line displays (extend it
for a new widget class with a static copy).
"""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest

from tests.notebooks.build_notebooks import NOTEBOOKS

TUTORIALS = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
LIVE_WIDGET_LINE = re.compile(r"^(ark\.(ChatWidget|TimelineWidget)\(.*\)|chat|timeline)$")
OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>")


def _widget_cells(nb):
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and cell.source.strip():
            if LIVE_WIDGET_LINE.match(cell.source.strip().splitlines()[-1].strip()):
                yield index, cell


def _texts(cell) -> list[str]:
    out = []
    for output in cell.outputs:
        out.append(str(output.get("text") or ""))
        out.extend(str(v) for v in (output.get("data") or {}).values())
    return out


@pytest.mark.parametrize("name", TUTORIALS)
def test_each_live_widget_cell_carries_its_static_copy(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for index, cell in _widget_cells(nb):
        plain = [str((o.get("data") or {}).get("text/plain") or "") for o in cell.outputs]
        html = [str((o.get("data") or {}).get("text/html") or "") for o in cell.outputs]
        assert any(p.endswith("(static summary)") for p in plain) and any(html), (
            f"{name} cell {index} shows a widget but carries no static copy: rebuild it with "
            "tests/notebooks/build_notebooks.py --execute")


@pytest.mark.parametrize("name", TUTORIALS)
def test_no_output_is_a_bare_object_repr(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            found = [t for t in _texts(cell) if OBJECT_REPR.search(t)]
            assert not found, f"{name} cell {index} prints {OBJECT_REPR.search(found[0]).group(0)}"


def test_nbconvert_html_of_an_executed_chat_shows_the_conversation_and_no_object_repr(tmp_path):
    """The tutorial with the most cards, as nbconvert (nbviewer) renders it: the static chat
    shows the tool results and the denial's reason in plain view, and no repr line."""
    name = "03_approvals.ipynb"
    target = tmp_path / "03.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(NOTEBOOKS / name),
                    "--output", str(target)], check=True, capture_output=True)
    page = target.read_text()
    assert not OBJECT_REPR.search(page.replace("&lt;", "<").replace("&gt;", ">"))
    assert "cleared /tmp/cache" in page           # a tool result, without a click
    assert "denied: logs are still needed" in page  # the denial's reason, in plain view


def _github_like(html: str) -> str:
    """What a renderer that strips <style> and <script> (GitHub's notebook view) leaves."""
    html = re.sub(r"<style\b.*?</style>", "", html, flags=re.S | re.I)
    html = re.sub(r"<script\b.*?</script>", "", html, flags=re.S | re.I)
    return html


@pytest.mark.parametrize("name", TUTORIALS)
def test_static_copies_read_without_styles_or_scripts(name):
    """Stripped of <style> and <script>, each static copy still holds its conversation or
    trace as text (no CSS shown as text, nothing that needs a script to appear)."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for index, cell in _widget_cells(nb):
        for output in cell.outputs:
            html = str((output.get("data") or {}).get("text/html") or "")
            if not html:
                continue
            stripped = _github_like(html)
            text = re.sub(r"<[^>]+>", " ", stripped)
            assert not re.search(r"\.arknb[\w-]*\s*[{,]", text), f"{name} cell {index}: CSS shows as text"
            assert len(text.split()) > 5, f"{name} cell {index}: nothing left to read without styles"
