"""The dependency rule of DESIGN §1, checked on the source (not left to goodwill)."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "arknb"

# What each part of arknb may import from arknb (besides itself).
ALLOWED: dict[str, set[str]] = {
    "domain": set(),
    "events": {"domain"},
    "hooks": {"domain", "events"},
    "state": {"domain"},
    "tools": {"domain"},
    "providers": {"domain", "events"},
    "controller": {"domain", "events", "state"},
    "runtime": {"domain", "events", "hooks", "state", "tools", "providers", "controller"},
    "widgets": {"domain", "events", "hooks", "state", "tools", "providers", "controller", "runtime", "eval", "graphs"},
    "eval": {"domain", "events", "hooks", "state", "tools", "providers", "controller", "runtime"},
    "durable": {"domain", "events", "state"},
    "scan_secrets": {"state"},
    # Capabilities plug into the runtime through its public seam (arknb.runtime.extensions
    # and the public names of arknb.runtime), never its underscore modules (DESIGN §14).
    "planner": {"domain", "events", "hooks", "state", "tools", "runtime"},
    "skills": {"domain", "events", "hooks", "state", "tools", "runtime"},
    "memory": {"domain", "events", "hooks", "state", "tools", "runtime"},
    # DESIGN §18: the AG-UI server and the IPython extension sit on top; nothing imports them.
    "agui": {"domain", "events", "state", "tools", "controller", "runtime"},
    "magics": {"domain", "events", "hooks", "state", "tools", "controller", "runtime", "widgets"},
    # Graphs drive runtimes and durable stores through their public names, as a user would
    # (DESIGN §16, STYLE 13-14); nothing of the core imports them (no entry above names it).
    "graphs": {"domain", "events", "hooks", "state", "tools", "durable", "runtime", "planner", "controller"},
}

# The one runtime module that names the capability packages: it turns the constructor
# keywords (plan_mode=, skills=, ...) into extensions, importing them inside functions.
LAZY_CAPABILITY_IMPORTS: dict[str, set[str]] = {"runtime/_keywords.py": {"planner", "skills", "memory"}}


def _part(path: pathlib.Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _arknb_imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    depth = len(path.relative_to(PACKAGE).parts) - 1  # folders below arknb/
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("arknb."):
                    found.add(alias.name.split(".")[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("arknb."):
                found.add(node.module.split(".")[1])
            elif node.level > 0:
                up = node.level - 1
                if up >= depth:  # reaches the arknb package itself
                    target = (node.module or "").split(".")[0]
                    if target:
                        found.add(target)
                    else:
                        found.update(a.name for a in node.names)
    return found


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if _part(p) in ALLOWED)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_what_the_dependency_rule_allows(path: pathlib.Path) -> None:
    part = _part(path)
    lazy = LAZY_CAPABILITY_IMPORTS.get(str(path.relative_to(PACKAGE)), set())
    illegal = _arknb_imports(path) - ALLOWED[part] - {part} - lazy
    assert not illegal, f"{path.relative_to(PACKAGE)} ({part}) imports {sorted(illegal)}; DESIGN §1 forbids it"


def test_the_keyword_module_imports_capabilities_only_inside_functions() -> None:
    for rel, names in LAZY_CAPABILITY_IMPORTS.items():
        tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
        for node in tree.body:  # module level only
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                target = (node.module or "").split(".")[0]
                assert target not in names, f"{rel} imports {target} at module level; import it lazily"


CAPABILITIES = sorted(p for p in PACKAGE.rglob("*.py") if _part(p) in ("planner", "skills", "memory", "graphs"))


@pytest.mark.parametrize("path", CAPABILITIES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_capabilities_use_only_the_runtimes_public_seam(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if "runtime" in parts:
                below = parts[parts.index("runtime") + 1:]
                assert not any(p.startswith("_") for p in below), (
                    f"{path.relative_to(PACKAGE)} imports {node.module}: capabilities use the runtime's "
                    "public seam (arknb.runtime.extensions), never its phases")


def test_importing_the_runtime_does_not_import_the_widget_stack() -> None:
    code = ("import sys, arknb, arknb.runtime; "
            "bad = [m for m in ('ipywidgets', 'anywidget', 'arknb.widgets') if m in sys.modules]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing arknb pulled in: {out.stdout.strip()}"


def test_importing_arknb_does_not_import_eval_or_opentelemetry() -> None:
    # Seed 003 §2: the core never depends on the eval module (nor on its optional extra).
    code = ("import sys, arknb, arknb.runtime, arknb.widgets; "
            "bad = [m for m in sys.modules if m == 'arknb.eval' or m.startswith(('arknb.eval.', 'opentelemetry'))]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing the core pulled in: {out.stdout.strip()}"


def test_importing_arknb_does_not_import_agui_its_stack_or_ipython_magics() -> None:
    # DESIGN §18: arknb.agui (extra arknb[agui]) and arknb.magics load only when asked for.
    code = ("import sys, arknb, arknb.runtime, arknb.widgets; "
            "bad = [m for m in sys.modules if m.startswith(('arknb.agui', 'arknb.magics', 'ag_ui', 'starlette', "
            "'uvicorn'))]; print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing the core pulled in: {out.stdout.strip()}"


def test_no_core_module_names_agui_or_magics() -> None:
    for path in PACKAGE.rglob("*.py"):
        part = _part(path)
        if part in ("agui", "magics", "__init__"):
            continue
        assert not _arknb_imports(path) & {"agui", "magics"}, f"{path.relative_to(PACKAGE)} imports agui/magics"


def test_importing_eval_does_not_import_opentelemetry() -> None:
    # ev.otel (the optional extra) loads only when asked for.
    code = ("import sys, arknb.eval as ev; "
            "print(','.join(m for m in sys.modules if m.startswith('opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing arknb.eval pulled in: {out.stdout.strip()}"


GRAPHS = sorted((PACKAGE / "graphs").rglob("*.py"))


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_graphs_use_only_public_modules_of_the_packages_they_drive(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (node.level == 0 or node.level > 1):
            parts = node.module.split(".")
            below = parts[1:] if node.level == 0 else parts
            assert not any(p.startswith("_") for p in below), (
                f"{path.relative_to(PACKAGE)} imports {node.module}: graphs drive runtimes and stores through "
                "their public names (DESIGN §16), never their underscore modules")


def test_no_core_package_imports_graphs() -> None:
    core = [p for p in PACKAGE.rglob("*.py") if _part(p) not in ("graphs", "widgets", "__init__")]
    offenders = [str(p.relative_to(PACKAGE)) for p in core if "graphs" in _arknb_imports(p)]
    assert offenders == [], f"{offenders} import arknb.graphs; the core never does (DESIGN §1)"
# -- tool sources (DESIGN §15, STYLE §14) ---------------------------------------------------

def _third_party_imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_tools_mcp_imports_the_mcp_sdk(path: pathlib.Path) -> None:
    rel = path.relative_to(PACKAGE)
    if rel.parts[:2] == ("tools", "mcp"):
        return
    sdk = _third_party_imports(path) & {"mcp", "mcp_types"}
    assert not sdk, f"{rel} imports the MCP SDK ({sorted(sdk)}); only arknb/tools/mcp/ may (extra arknb[mcp])"


@pytest.mark.parametrize("path", sorted((PACKAGE / "tools" / "mcp").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_tools_mcp_imports_only_tools_and_domain(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("arknb."):
            assert node.module.split(".")[1] in ("domain", "tools"), f"{path.name} imports {node.module}"
        if isinstance(node, ast.ImportFrom) and node.level >= 3:
            raise AssertionError(f"{path.name} reaches above arknb.tools ({'.' * node.level}{node.module})")


def test_importing_the_core_does_not_import_the_mcp_sdk() -> None:
    code = ("import sys, arknb, arknb.runtime, arknb.tools, arknb.durable; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types') or m == 'arknb.tools.mcp']; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing the core pulled in: {out.stdout.strip()}"
