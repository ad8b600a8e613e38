// The waterfall: nested spans (run > turn > model call / tool calls, sub-runs under
// their tool call) with bars on a shared time axis and durations. A span is a button:
// clicking it filters the rows to that span (clicking again clears the filter).
import { h } from "./dom.js";
import { fmtMs } from "./timeline_summary.js";

const MAX_SPANS = 400;   // span rows drawn at once (the newest)
const ALL_RUNS_TREE = 300; // with "all runs", the full tree only up to this many spans

const STATUS_WORD = { ok: "ok", error: "error", denied: "denied", deferred: "deferred", cancelled: "cancelled",
  open: "running", unfinished: "unfinished" };

/** The spans to draw for a run filter (`runs`: the run ids shown, or null for all), without
 * the spans under a collapsed one (`collapsed`: span ids, e.g. a delegate_task call whose
 * sub-agent's run is folded away). */
export function visibleSpans(index, runs, collapsed = new Set()) {
  let spans = index.spans;
  let note = "";
  if (collapsed.size) {
    const hidden = new Set();
    spans = spans.filter((s) => {
      if (s.parent !== null && (hidden.has(s.parent) || collapsed.has(s.parent))) { hidden.add(s.id); return false; }
      return true;
    });
  }
  if (runs) spans = spans.filter((s) => runs.has(s.run_id));
  else if (spans.length > ALL_RUNS_TREE) {
    spans = spans.filter((s) => s.kind === "run" && s.depth === 0);
    note = "Select a run to see its turns and calls.";
  }
  if (spans.length > MAX_SPANS) {
    note = `${(spans.length - MAX_SPANS).toLocaleString("en-US")} earlier spans not drawn.`;
    spans = spans.slice(-MAX_SPANS);
  }
  return { spans, note };
}

export function renderWaterfall(el, index, { runs, activeSpan, onPick, now, collapsed = new Set(), onToggle = null }) {
  const { spans, note } = visibleSpans(index, runs, collapsed);
  const parents = new Set();
  for (const s of index.spans) if (s.parent !== null) parents.add(s.parent);
  el.hidden = spans.length === 0;
  if (!spans.length) { el.replaceChildren(); return; }
  let t0 = Infinity, t1 = -Infinity;
  for (const s of spans) {
    t0 = Math.min(t0, s.start);
    t1 = Math.max(t1, s.end === null ? now : s.end);
  }
  const total = t1 > t0 ? t1 - t0 : 1;
  const rows = spans.map((s) => {
    const end = s.end === null ? now : s.end;
    const left = (100 * (s.start - t0)) / total;
    const width = Math.max(0.4, (100 * (end - s.start)) / total);
    const duration = s.end === null ? "…" : fmtMs((s.end - s.start) * 1000);
    const bar = h("span", { class: `arknb-span-bar arknb-span-${s.kind} arknb-span-s-${s.status}`,
      style: `left:${left.toFixed(3)}%;width:${Math.min(width, 100 - left).toFixed(3)}%` });
    const row = h("button", { type: "button", class: "arknb-span", testid: "arknb-span", "data-kind": s.kind,
      "data-status": s.status, "data-depth": String(s.depth), "data-span": String(s.id),
      "aria-pressed": String(activeSpan === s.id),
      title: `${s.kind} ${s.label}: ${STATUS_WORD[s.status] || s.status}, ${duration}. Click to show only its rows.` },
    h("span", { class: "arknb-span-label", style: `padding-left:${Math.min(s.depth, 8) * 12}px` },
      parents.has(s.id) && onToggle
        // The marker is drawn by CSS (::before), so it is no part of the span's text.
        ? h("span", { class: "arknb-span-fold", testid: "arknb-span-toggle", "data-toggle": "true",
          "data-folded": String(collapsed.has(s.id)),
          title: collapsed.has(s.id) ? "Show the spans inside (→)" : "Hide the spans inside (←)" })
        : null,
      h("span", { class: `arknb-span-kind arknb-span-kind-${s.kind}` }, s.kind), " ", s.label),
    // A plan update or skill activation marks its tool span, on the track right after the bar.
    h("span", { class: "arknb-span-track" }, bar, s.mark ? h("span", {
      class: `arknb-mark arknb-mark-${s.markKind}`, testid: "arknb-span-mark", "data-mark": s.markKind,
      style: left + width < 70 ? `left:calc(${(left + width).toFixed(3)}% + 4px)`
        : `right:calc(${(100 - left).toFixed(3)}% + 4px)` }, s.mark) : null),
    h("span", { class: `arknb-span-dur arknb-status-${s.status === "open" ? "" : s.status}`, testid: "arknb-span-duration" },
      duration));
    if (parents.has(s.id) && onToggle) {
      row.setAttribute("aria-expanded", String(!collapsed.has(s.id)));
      // The marker folds; ← and → fold and unfold from the keyboard (a tree's keys).
      row.addEventListener("keydown", (ev) => {
        if ((ev.key === "ArrowLeft" && !collapsed.has(s.id)) || (ev.key === "ArrowRight" && collapsed.has(s.id))) {
          ev.preventDefault();
          onToggle(s.id);
        }
      });
    }
    row.addEventListener("click", (ev) => {
      if (onToggle && ev.target.closest && ev.target.closest("[data-toggle]")) onToggle(s.id);
      else onPick(s.id);
    });
    return row;
  });
  // One Tab stop for the whole waterfall (the pressed span, else the first); arrows move.
  const stop = Math.max(0, spans.findIndex((s) => s.id === activeSpan));
  rows.forEach((row, i) => { row.tabIndex = i === stop ? 0 : -1; });
  el.replaceChildren(...(note ? [h("div", { class: "arknb-muted arknb-span-note" }, note)] : []), ...rows);
}

/** Arrow keys, Home and End move between span buttons (installed once per waterfall). */
export function waterfallKeys(el) {
  el.addEventListener("keydown", (ev) => {
    const rows = [...el.querySelectorAll("[data-testid='arknb-span']")];
    const at = rows.indexOf(document.activeElement);
    if (at < 0) return;
    const next = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: rows.length - 1 }[ev.key];
    if (next === undefined) return;
    ev.preventDefault();
    const row = rows[Math.max(0, Math.min(rows.length - 1, next))];
    rows.forEach((r) => { r.tabIndex = r === row ? 0 : -1; });
    row.focus();
  });
}
