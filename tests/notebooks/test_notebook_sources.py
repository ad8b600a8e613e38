"""The committed notebooks match their generator and were committed executed."""

from __future__ import annotations

import nbformat
import pytest

from tests.notebooks.build_notebooks import NOTEBOOKS, NOTEBOOKS_SPEC, build


@pytest.mark.parametrize("name", sorted(NOTEBOOKS_SPEC))
def test_committed_notebook_matches_generator(name):
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    expected = build(name, NOTEBOOKS_SPEC[name])
    assert [(c.cell_type, c.source) for c in committed.cells] == [
        (c.cell_type, c.source) for c in expected.cells
    ], f"{name} differs from tests/notebooks/build_notebooks.py: rebuild with --execute"


@pytest.mark.parametrize("name", sorted(NOTEBOOKS_SPEC))
def test_committed_notebook_was_executed(name):
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{name} has unexecuted cells"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert "widgets" not in committed.metadata
