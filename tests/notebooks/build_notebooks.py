"""Write the tutorial notebooks in ``notebooks/`` from the cell lists in ``specs/``.

The notebooks are the product; this script only keeps their JSON tidy (stable cell
ids, one kernelspec, no stray metadata). After changing a notebook here:

    .venv/bin/python tests/notebooks/build_notebooks.py          # write the .ipynb files
    .venv/bin/python tests/notebooks/build_notebooks.py --execute  # and run them in place

Commit the executed notebooks: nbval compares their stored outputs with a fresh run.
Cells whose output is volatile (widget views, timings) start with
``# NBVAL_IGNORE_OUTPUT``; everything else is checked. Widget views and saved widget
state are stripped after execution (they embed the JS bundle and random ids).
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"


def _load_specs() -> dict[str, list[tuple[str, str]]]:
    """``{notebook file name: cells}`` from every ``specs/nbNN_*.py`` module, in file order."""
    if str(REPO) not in sys.path:  # run as a script: make ``tests`` importable
        sys.path.insert(0, str(REPO))
    specs: dict[str, list[tuple[str, str]]] = {}
    for path in sorted((Path(__file__).parent / "specs").glob("nb[0-9][0-9]_*.py")):
        module = importlib.import_module(f"tests.notebooks.specs.{path.stem}")
        specs[module.NAME] = module.CELLS
    return specs


NOTEBOOKS_SPEC = _load_specs()


def build(name: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    stem = name.split("_", 1)[0]
    for i, (kind, source, *meta) in enumerate(cells):
        maker = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = maker(source)
        if meta:
            cell.metadata.update(meta[0])
        cell.id = f"nb{stem}-{i:02d}"  # stable ids keep diffs small
        nb.cells.append(cell)
    return nb


def strip_widget_state(path: Path) -> None:
    """Drop saved widget state and widget views: they embed the whole JS bundle and
    random model ids, and a widget is only live once its cell runs again anyway."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if "application/vnd.jupyter.widget-view+json" not in o.get("data", {})]
    nbformat.write(nb, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execute", action="store_true", help="run each notebook in place")
    parser.add_argument("only", nargs="*", help="notebook names (default: all)")
    args = parser.parse_args()
    NOTEBOOKS.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS_SPEC.items():
        if args.only and not any(o in name for o in args.only):
            continue
        path = NOTEBOOKS / name
        nbformat.write(build(name, cells), path)
        print("wrote", path.relative_to(REPO))
        if args.execute:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
            subprocess.run(
                [sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "notebook",
                 "--inplace", "--ExecutePreprocessor.timeout=120", str(path)],
                check=True, env=env, cwd=NOTEBOOKS,
            )
            strip_widget_state(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
