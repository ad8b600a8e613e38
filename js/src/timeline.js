// TimelineWidget front end (arknb/widgets/timeline.py). The event log arrives in
// offset-stamped `events` batches, is folded in once per animation frame, and is
// shown as a waterfall of spans, a filterable list of rows and a detail pane.
import { Action, Msg } from "./lib/protocol.js";
import { h, frameScheduler, setChildren } from "./lib/dom.js";
import { jsonView } from "./lib/json_view.js";
import { diffView } from "./lib/diff.js";
import { callOf, computeSpans, firstTime, spanKey, visibleSpans } from "./lib/spans.js";

const stores = new WeakMap();
const MAX_ROWS = 2000;  // rows in the DOM at once (the newest matching ones)
const MAX_SPANS = 400;

function storeFor(model) {
  let store = stores.get(model);
  if (store) return store;
  store = { events: [], queue: [], views: new Set(), helloSent: false };
  const flush = () => {
    const before = store.events.length;
    for (const msg of store.queue) {
      const have = store.events.length;
      const { start, events } = msg;
      if (start > have) {
        if (!store.helloSent) { store.helloSent = true; model.send({ type: Action.HELLO, have }); }
        continue;
      }
      for (let i = have - start; i < events.length; i++) store.events.push(events[i]);
      store.helloSent = false;
    }
    store.queue = [];
    if (store.events.length !== before) for (const view of store.views) view.update(before);
  };
  store.schedule = frameScheduler(flush);
  model.on("msg:custom", (msg) => {
    if (msg && msg.type === Msg.EVENTS && Array.isArray(msg.events) && Number.isInteger(msg.start)) {
      store.queue.push(msg);
      store.schedule();
    }
  });
  stores.set(model, store);
  return store;
}

function initialize({ model }) {
  const store = storeFor(model);
  model.send({ type: Action.HELLO, have: store.events.length });
}

function fmtTime(t) { return `+${t.toFixed(3)}s`; }

export function summary(e) {
  const p = e.payload || {};
  switch (e.type) {
    case "llm.chunk": return `${p.kind || "text"} ${JSON.stringify(p.text ?? "")}`;
    case "tool.before": case "tool.after": case "tool.denied": { const c = callOf(p); return `${c.name} ${c.id}`; }
    case "llm.before": return `turn ${p.turn ?? "?"}`;
    case "hook.decision": return `${p.hook || "?"} ${p.action || "?"} (${p.slot || "?"})`;
    case "agent.success": case "agent.error": return String(p.stop_reason ?? "");
    case "agent.suspended": return String(p.reason ?? "");
    case "approval.decided": return `${p.approval_id} ${p.decision}`;
    case "context.compressed": return `${p.before_tokens ?? "?"} → ${p.after_tokens ?? "?"} tokens`;
    default: return "";
  }
}

function render({ model, el }) {
  const store = storeFor(model);
  let selected = null; // index into store.events
  let shown = [];      // indices currently rendered as rows

  const search = h("input", { class: "arknb-input-line", testid: "arknb-timeline-filter", type: "search",
    placeholder: "search events…", "aria-label": "Search events" });
  const typeSel = h("select", { class: "arknb-select", testid: "arknb-timeline-type", "aria-label": "Event type" });
  const runSel = h("select", { class: "arknb-select", testid: "arknb-timeline-run", "aria-label": "Run" });
  const hideChunks = h("input", { type: "checkbox", testid: "arknb-timeline-hide-chunks" });
  const exportBtn = h("button", { class: "arknb-btn", testid: "arknb-timeline-export", type: "button",
    title: "Download every event as JSON lines" }, "Export JSONL");
  const count = h("span", { class: "arknb-muted", testid: "arknb-timeline-count" });
  const waterfall = h("div", { class: "arknb-waterfall", testid: "arknb-timeline-waterfall" });
  const list = h("div", { class: "arknb-rows", testid: "arknb-timeline-rows", role: "list" });
  const detail = h("div", { class: "arknb-detail", testid: "arknb-timeline-detail" },
    h("div", { class: "arknb-muted" }, "Select an event to see its payload."));
  const root = h("div", { class: "arknb arknb-timeline", testid: "arknb-timeline" },
    h("div", { class: "arknb-toolbar" }, h("span", { class: "arknb-title" }, "Timeline"), search, typeSel, runSel,
      h("label", { class: "arknb-check" }, hideChunks, " hide chunks"), h("span", { class: "arknb-spacer" }),
      count, exportBtn),
    waterfall, h("div", { class: "arknb-split" }, list, detail));
  el.replaceChildren(root);

  const known = { types: new Set(), runs: new Set() };
  function refreshOptions(from) {
    let grew = false;
    for (let i = from; i < store.events.length; i++) {
      const e = store.events[i];
      if (!known.types.has(e.type)) { known.types.add(e.type); grew = true; }
      if (!known.runs.has(e.run_id)) { known.runs.add(e.run_id); grew = true; }
    }
    if (!grew && typeSel.options.length) return;
    const keep = (sel, values, all) => {
      const v = sel.value;
      sel.replaceChildren(h("option", { value: "" }, all), ...[...values].sort().map((x) => h("option", { value: x }, x)));
      sel.value = values.has(v) ? v : "";
    };
    keep(typeSel, known.types, "all types");
    keep(runSel, known.runs, "all runs");
  }

  function matches(e) {
    if (typeSel.value && e.type !== typeSel.value) return false;
    if (runSel.value && e.run_id !== runSel.value) return false;
    if (hideChunks.checked && e.type === "llm.chunk") return false;
    const q = search.value.trim().toLowerCase();
    if (!q) return true;
    if (e.type.toLowerCase().includes(q) || summary(e).toLowerCase().includes(q)) return true;
    try { return JSON.stringify(e.payload).toLowerCase().includes(q); } catch { return false; }
  }

  function rowFor(i, t0) {
    const e = store.events[i];
    const row = h("button", { type: "button", class: "arknb-row", testid: "arknb-timeline-row", role: "listitem",
      "data-type": e.type, "data-sequence": String(e.sequence), "data-index": String(i),
      "aria-pressed": String(selected === i) },
      h("span", { class: "arknb-row-time" }, fmtTime((Number(e.timestamp) || 0) - t0)),
      h("span", { class: "arknb-row-seq" }, `#${e.sequence}`),
      h("span", { class: `arknb-row-type arknb-type-${e.type.split(".")[0]}` }, e.type),
      h("span", { class: "arknb-row-summary" }, summary(e)));
    row.addEventListener("click", () => select(i));
    return row;
  }

  function renderRows(from) {
    const t0 = firstTime(store.events);
    if (from === 0) { list.replaceChildren(); shown = []; }
    const rows = [];
    for (let i = from; i < store.events.length; i++) if (matches(store.events[i])) { shown.push(i); rows.push(rowFor(i, t0)); }
    list.append(...rows);
    // Keep the DOM bounded: drop the oldest rows past MAX_ROWS.
    while (shown.length > MAX_ROWS) { shown.shift(); list.firstChild.remove(); }
    const total = store.events.length;
    count.textContent = `${shown.length} of ${total} events${shown.length === MAX_ROWS ? " (newest shown)" : ""}`;
  }

  const collapsed = new Set(); // keys of spans whose nested spans are hidden

  function renderWaterfall() {
    const { spans } = computeSpans(store.events);
    const t0 = firstTime(store.events);
    let tEnd = 0;
    for (const e of store.events) tEnd = Math.max(tEnd, (Number(e.timestamp) || 0) - t0);
    const total = tEnd > 0 ? tEnd : 1;
    const parents = new Set(spans.filter((s) => s.parent !== null).map((s) => s.parent));
    const inRun = runSel.value ? new Set(spans.filter((s) => s.run_id === runSel.value).map((s) => s.id)) : null;
    if (inRun) for (const s of spans) if (s.parent !== null && inRun.has(s.parent)) inRun.add(s.id); // a run's nested spans
    const visible = visibleSpans(spans, collapsed).filter((s) => !inRun || inRun.has(s.id)).slice(-MAX_SPANS);
    waterfall.replaceChildren(...visible.map((s) => {
      const end = s.end === null ? tEnd : s.end;
      const left = (100 * s.start) / total, width = Math.max(0.4, (100 * (end - s.start)) / total);
      const bar = h("div", { class: `arknb-span-bar arknb-span-${s.kind} arknb-span-${s.status}`,
        style: `left:${left.toFixed(3)}%;width:${Math.min(width, 100 - left).toFixed(3)}%` });
      const key = spanKey(s);
      const toggle = parents.has(s.id)
        ? h("button", { type: "button", class: "arknb-span-toggle", testid: "arknb-span-toggle",
          "aria-expanded": String(!collapsed.has(key)), title: collapsed.has(key) ? "Show nested spans" : "Hide nested spans" },
          collapsed.has(key) ? "▸" : "▾")
        : h("span", { class: "arknb-span-toggle arknb-span-leaf" }, "");
      if (parents.has(s.id)) toggle.addEventListener("click", (ev) => {
        ev.stopPropagation();
        if (collapsed.has(key)) collapsed.delete(key); else collapsed.add(key);
        renderWaterfall();
      });
      const span = h("div", { class: "arknb-span", testid: "arknb-span", "data-kind": s.kind, "data-status": s.status,
        "data-depth": String(s.depth), title: `${s.label}: ${fmtTime(s.start)} → ${s.end === null ? "open" : fmtTime(s.end)}` },
        h("span", { class: "arknb-span-label", style: `padding-left:${(s.depth * 14).toFixed(0)}px` }, toggle, s.label),
        h("span", { class: "arknb-span-track" }, bar),
        h("span", { class: "arknb-span-dur arknb-muted" }, s.end === null ? "…" : `${((s.end - s.start) * 1000).toFixed(0)} ms`));
      span.addEventListener("click", () => {
        const idx = store.events.findIndex((e) => e.sequence === s.start_seq && e.run_id === s.run_id);
        if (idx >= 0) select(idx);
      });
      return span;
    }));
    waterfall.hidden = visible.length === 0;
  }

  function select(i) {
    selected = i;
    for (const row of list.querySelectorAll("[aria-pressed='true']")) row.setAttribute("aria-pressed", "false");
    const row = list.querySelector(`[data-index='${i}']`);
    if (row) row.setAttribute("aria-pressed", "true");
    const e = store.events[i];
    const p = e.payload || {};
    setChildren(detail,
      h("div", { class: "arknb-detail-head" }, h("strong", {}, e.type), ` #${e.sequence} · run ${e.run_id}`),
      e.type === "hook.decision" ? h("div", {}, h("div", { class: "arknb-muted" }, "before → after"), diffView(p.before, p.after)) : null,
      jsonView(e, { openDepth: 2 }));
  }

  function exportJsonl() {
    const text = store.events.map((e) => JSON.stringify(e)).join("\n") + (store.events.length ? "\n" : "");
    const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
    const a = h("a", { href: url, download: "arknb-trace.jsonl", hidden: true });
    root.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  const refilter = () => { renderRows(0); renderWaterfall(); };
  search.addEventListener("input", refilter);
  typeSel.addEventListener("change", refilter);
  runSel.addEventListener("change", refilter);
  hideChunks.addEventListener("change", refilter);
  exportBtn.addEventListener("click", exportJsonl);
  list.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
    const rows = [...list.children];
    const at = rows.indexOf(document.activeElement);
    const next = rows[Math.max(0, Math.min(rows.length - 1, at + (ev.key === "ArrowDown" ? 1 : -1)))];
    if (next) { ev.preventDefault(); next.focus(); next.click(); }
  });

  const view = {
    update(from) {
      refreshOptions(from);
      const stick = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
      renderRows(from);
      renderWaterfall();
      if (stick) list.scrollTop = list.scrollHeight;
    },
  };
  store.views.add(view);
  refreshOptions(0);
  renderRows(0);
  renderWaterfall();
  root.dataset.ready = "true";
  return () => { store.views.delete(view); };
}

export default { initialize, render };
