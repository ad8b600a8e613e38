"""HTML and Markdown views of reports and comparisons.

Every value is escaped: case names, answers and explanations come from models and
users, and a notebook page can run kernel code. The HTML table sorts by a click on
a column header (a few lines of inline script; without scripts it stays a plain
table) and colours each status; colours are translucent so the light and dark
JupyterLab themes both read well.
"""

from __future__ import annotations

import html
import json
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compare import Comparison
    from .report import CaseRow, SuiteReport

__all__ = ["comparison_html", "comparison_markdown", "report_html", "report_markdown"]

_STYLE = """
#{id} {{ font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 13px; }}
#{id} .arknb-summary {{ margin: 4px 0 8px; }}
#{id} table {{ border-collapse: collapse; }}
#{id} th, #{id} td {{ padding: 3px 8px; border-bottom: 1px solid rgba(127,127,127,.25); text-align: left;
  vertical-align: top; }}
#{id} th {{ cursor: pointer; user-select: none; white-space: nowrap; }}
#{id} th[data-dir="asc"]::after {{ content: " ▲"; }}
#{id} th[data-dir="desc"]::after {{ content: " ▼"; }}
#{id} td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
#{id} .st {{ padding: 1px 6px; border-radius: 8px; font-weight: 600; }}
#{id} .st-passed, #{id} .st-improvement {{ background: rgba(52,168,83,.18); color: rgb(30,140,60); }}
#{id} .st-failed, #{id} .st-regression {{ background: rgba(234,67,53,.18); color: rgb(200,50,40); }}
#{id} .st-errored, #{id} .st-removed {{ background: rgba(251,188,4,.25); color: rgb(170,110,0); }}
#{id} .st-unchanged, #{id} .st-added {{ background: rgba(127,127,127,.18); }}
#{id} .flaky {{ margin-left: 4px; font-size: 11px; opacity: .8; }}
#{id} {{ overflow-x: auto; max-width: 100%; }}
#{id} .grade {{ display: inline-block; margin-right: 6px; white-space: nowrap; }}
#{id} .err {{ max-width: 32em; overflow-wrap: anywhere; opacity: .85; }}
"""

_SCRIPT = """
(() => {{
  const root = document.getElementById({id});
  if (!root) return;
  root.querySelectorAll("th").forEach((th, col) => th.addEventListener("click", () => {{
    const body = root.querySelector("tbody");
    const dir = th.dataset.dir === "asc" ? "desc" : "asc";
    root.querySelectorAll("th").forEach((h) => delete h.dataset.dir);
    th.dataset.dir = dir;
    const key = (tr) => tr.children[col].dataset.sort ?? tr.children[col].textContent;
    const rows = [...body.rows].sort((a, b) => {{
      const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      const c = !isNaN(nx) && !isNaN(ny) ? nx - ny : String(x).localeCompare(String(y));
      return dir === "asc" ? c : -c;
    }});
    rows.forEach((r) => body.appendChild(r));
  }}));
}})();
"""

_STATUS_ORDER = {"errored": 0, "failed": 1, "passed": 2}


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _frame(kind: str, summary: str, head: list[str], rows: list[str]) -> str:
    id_ = f"arknb-{kind}-{uuid.uuid4().hex[:10]}"
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    return (f'<div id="{id_}" class="arknb-{kind}" data-testid="arknb-{kind}">'
            f"<style>{_STYLE.format(id=id_)}</style>"
            f'<div class="arknb-summary">{summary}</div>'
            f"<table><thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<script>{_SCRIPT.format(id=json.dumps(id_))}</script></div>")


def _grades_html(row: CaseRow) -> str:
    parts = []
    for g in row.grades:
        mark = "⚠" if g.error else ("✓" if g.passed else "✗")
        parts.append(f'<span class="grade" title="{_e(g.explanation)}">{mark} {_e(g.name)}</span>')
    return "".join(parts) or "<i>no graders</i>"


def report_html(report: SuiteReport) -> str:
    """The report as a sortable HTML table."""
    rows = []
    for row in report.rows:
        flaky = '<span class="flaky">flaky</span>' if row.flaky else ""
        passes = f"{row.passes}/{row.runs}"
        rows.append(
            "<tr>"
            f"<td>{_e(row.name)}</td>"
            f'<td data-sort="{_STATUS_ORDER[row.status]}"><span class="st st-{row.status}">{row.status}</span>'
            f"{flaky}</td>"
            f'<td class="num" data-sort="{row.passes / row.runs:.4f}">{passes}</td>'
            f'<td data-sort="{sum(g.passed for g in row.grades)}">{_grades_html(row)}</td>'
            f'<td class="num">{row.turns}</td><td class="num">{row.tool_calls}</td>'
            f'<td class="num">{_tokens(row.tokens)}</td>'
            f'<td class="num" data-sort="{row.latency_s:.6f}">{row.latency_s:.2f}</td>'
            f"<td>{_e(row.stop_reason or '')}</td>"
            f'<td class="err">{_e(row.error or "")}</td>'
            "</tr>")
    return _frame("report", _e(report.summary()),
                  ["case", "status", "passes", "grades", "turns", "tools", "tokens", "latency s", "stop", "error"],
                  rows)


def _md(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def report_markdown(report: SuiteReport) -> str:
    """The report as a Markdown table with a summary line."""
    lines = [report.summary(), "",
             "| case | status | passes | grades | turns | tools | tokens | latency s | stop | error |",
             "|---|---|---:|---|---:|---:|---:|---:|---|---|"]
    for row in report.rows:
        grades = "; ".join(("⚠ " if g.error else "✓ " if g.passed else "✗ ") + g.name for g in row.grades)
        status = row.status + (" (flaky)" if row.flaky else "")
        error = row.error or ""
        if len(error) > 120:
            error = error[:117] + "..."
        lines.append(f"| {_md(row.name)} | {status} | {row.passes}/{row.runs} | {_md(grades)} | {row.turns} | "
                     f"{row.tool_calls} | {_tokens(row.tokens)} | {row.latency_s:.2f} | {_md(row.stop_reason or '')} | "
                     f"{_md(error)} |")
    return "\n".join(lines)


def _changes(comparison: Comparison) -> list[tuple[str, str, str, str]]:
    out = [(c.name, c.baseline_status, c.candidate_status, "regression") for c in comparison.regressions]
    out += [(c.name, c.baseline_status, c.candidate_status, "improvement") for c in comparison.improvements]
    out += [(name, "", comparison.candidate.row(name).status, "added") for name in comparison.added]
    out += [(name, comparison.baseline.row(name).status, "", "removed") for name in comparison.removed]
    out += [(c.name, c.baseline_status, c.candidate_status, "unchanged") for c in comparison.unchanged]
    return out


def comparison_html(comparison: Comparison) -> str:
    """The comparison as an HTML table (changes first)."""
    rows = []
    order = {"regression": 0, "removed": 1, "improvement": 2, "added": 3, "unchanged": 4}
    for name, before, after, change in _changes(comparison):
        rows.append(
            "<tr>"
            f"<td>{_e(name)}</td>"
            f'<td data-sort="{order[change]}"><span class="st st-{change}">{change}</span></td>'
            f"<td>{_e(before) or '—'}</td><td>{_e(after) or '—'}</td>"
            "</tr>")
    return _frame("comparison", _e(comparison.summary()), ["case", "change", "baseline", "candidate"], rows)


def comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: the summary, then the cases that changed."""
    lines = [comparison.summary()]
    changed = [c for c in _changes(comparison) if c[3] != "unchanged"]
    if changed:
        lines += ["", "| case | change | baseline | candidate |", "|---|---|---|---|"]
        lines += [f"| {_md(n)} | {ch} | {b or '—'} | {a or '—'} |" for n, b, a, ch in changed]
    return "\n".join(lines)


def _tokens(tokens: int | None) -> str:
    """A row's tokens, "unknown" when a server sent no usage (never shown as 0)."""
    return "unknown" if tokens is None else str(tokens)
