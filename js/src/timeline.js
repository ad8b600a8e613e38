// TimelineWidget front end (arknb/widgets/timeline.py). Events arrive in offset-
// stamped `events` messages (column batches), are folded in once per animation frame
// into one store per model, and are shown as a waterfall of nested spans, a virtual
// list of rows (only those on screen are in the DOM) and a detail pane.
import { Action, Msg } from "./lib/protocol.js";
import { h, frameScheduler } from "./lib/dom.js";
import { EventStore } from "./lib/timeline_store.js";
import { TimelineIndex } from "./lib/timeline_index.js";
import { status, summary, fmtMs } from "./lib/timeline_summary.js";
import { VirtualList } from "./lib/virtual_list.js";
import { renderWaterfall, waterfallKeys } from "./lib/timeline_waterfall.js";
import { renderDetail } from "./lib/timeline_detail.js";
import { hideStaticTwin } from "./lib/static_twin.js";
import { traceJsonl } from "./lib/trace_export.js";

const ROW_H = 22;          // px per row (timeline.css agrees)
const SLICE_MS = 8;        // a refilter works this long, then lets the page breathe
const WATERFALL_MS = 250;  // redraw open spans' bars at most this often

// One store per widget. anywidget hands initialize() and render() different model
// proxies, so the kernel-made static_id is the key (the model object where it is unset).
const stores = new Map();
const storesByModel = new WeakMap();

function token() {
  return Math.random().toString(36).slice(2) + Date.now().toString(36);
}

/** The per-model state every view of that model shares. */
function storeFor(model) {
  const id = model.get("static_id");
  let s = id ? stores.get(id) : storesByModel.get(model);
  if (s) return s;
  s = { data: new EventStore(model.get("max_view_events") || 100000), index: new TimelineIndex(), queue: [],
    views: new Set(), token: token(), asked: false };
  const flush = () => {
    let rebuild = false, from = Infinity;
    for (const [msg, buffers] of s.queue) {
      const r = s.data.apply(msg, buffers);
      if (r.kind === "rebuild") rebuild = true;
      else if (r.kind === "append") { from = Math.min(from, r.from); s.asked = false; }
      else if (r.kind === "gap" && !s.asked) {
        s.asked = true;
        model.send({ type: Action.HELLO, have: s.data.hi, token: s.token });
      }
    }
    s.queue = [];
    let change = null;
    if (rebuild) {
      s.index.reset();
      s.index.addRange(s.data, s.data.lo, s.data.hi);
      change = { rebuild: true };
    } else if (from !== Infinity) {
      from = Math.max(from, s.data.lo);
      s.index.addRange(s.data, from, s.data.hi);
      change = { from, to: s.data.hi };
    }
    for (const view of s.views) view.update(change);
  };
  s.schedule = frameScheduler(flush);
  model.on("msg:custom", (msg, buffers) => {
    if (!msg || msg.type !== Msg.EVENTS || !Number.isInteger(msg.start)) return;
    if (msg.to && msg.to !== s.token) return; // an answer to another page's view
    s.queue.push([msg, buffers]);
    s.schedule();
  });
  s.older = (limit) => {
    const d = s.data;
    if (d.loadingOlder) return;
    d.loadingOlder = true;
    d.olderError = "";
    const session = model.get("session_id");
    let beforeSequence = null;
    for (let pos = d.lo; pos < d.hi; pos++) {
      const e = d.at(pos);
      if (!session || e.session_id === session) { beforeSequence = e.sequence; break; }
    }
    model.send({ type: Action.OLDER, before: d.lo, before_sequence: beforeSequence, limit, token: s.token });
    for (const view of s.views) view.update(null);
  };
  if (id) {
    stores.set(id, s);
    // A closed widget's model is destroyed: forget its events.
    model.on("destroy", () => { if (stores.get(id) === s) stores.delete(id); });
  } else storesByModel.set(model, s);
  return s;
}

function initialize({ model }) {
  const s = storeFor(model);
  model.send({ type: Action.HELLO, have: null, token: s.token });
}

const fmtTime = (t) => `+${t.toFixed(3)}s`;
const thousands = (n) => n.toLocaleString("en-US");

function render({ model, el }) {
  const s = storeFor(model);
  const store = s.data, index = s.index;
  const cache = new WeakMap(); // event -> {summary, status, hay}
  const info = (e) => {
    let c = cache.get(e);
    if (!c) { c = { summary: summary(e), status: status(e), hay: null }; cache.set(e, c); }
    return c;
  };
  const filters = { type: "", run: "", span: null, hideChunks: false, query: "" };
  let shown = [];        // positions that pass the filters, ascending
  let selected = null;   // position whose detail is open
  let job = null;        // a running refilter
  let lastWaterfall = 0, waterfallVersion = -1;

  const search = h("input", { class: "arknb-input-line", testid: "arknb-timeline-filter", type: "search",
    placeholder: "search events…", "aria-label": "Search events" });
  const typeSel = h("select", { class: "arknb-select", testid: "arknb-timeline-type", "aria-label": "Event type" });
  const runSel = h("select", { class: "arknb-select", testid: "arknb-timeline-run", "aria-label": "Run" });
  const hideChunks = h("input", { type: "checkbox", testid: "arknb-timeline-hide-chunks" });
  const exportBtn = h("button", { class: "arknb-btn", testid: "arknb-timeline-export", type: "button",
    title: "Download the loaded events as an arknb trace (JSON lines, header first)" }, "Export JSONL");
  const count = h("span", { class: "arknb-muted", testid: "arknb-timeline-count", "aria-live": "polite" });
  const totals = h("div", { class: "arknb-totals", testid: "arknb-timeline-totals" });
  const spanChip = h("button", { type: "button", class: "arknb-chip", testid: "arknb-timeline-span-filter", hidden: true,
    title: "Show all rows again" });
  const waterfall = h("div", { class: "arknb-waterfall", testid: "arknb-timeline-waterfall", role: "group",
    "aria-label": "Spans" });
  const older = h("div", { class: "arknb-older", testid: "arknb-timeline-older-bar" });
  const detail = h("div", { class: "arknb-detail", testid: "arknb-timeline-detail", role: "region",
    "aria-label": "Event detail" });
  const list = new VirtualList({ rowHeight: ROW_H, label: "Events", testid: "arknb-timeline-rows",
    renderRow: (i) => rowFor(shown[i]), onOpen: (i) => select(shown[i], false) });
  const root = h("div", { class: "arknb arknb-timeline", testid: "arknb-timeline" },
    h("div", { class: "arknb-toolbar" }, h("span", { class: "arknb-title" }, "Timeline"), search, typeSel, runSel,
      h("label", { class: "arknb-check" }, hideChunks, " hide chunks"), spanChip, h("span", { class: "arknb-spacer" }),
      count, exportBtn),
    totals, waterfall,
    h("div", { class: "arknb-split" }, h("div", { class: "arknb-list-pane" }, older, list.el), detail));
  el.replaceChildren(root);
  waterfallKeys(waterfall);

  function rowFor(pos) {
    const e = store.at(pos);
    const c = info(e);
    const t0 = index.t0 ?? 0;
    const family = String(e.type).split(".")[0];
    const mark = family === "plan" || family === "skill" ? family : null; // DESIGN §14 milestones
    return h("div", { class: `arknb-row arknb-status-${c.status || "none"}`, testid: "arknb-timeline-row",
      "data-type": e.type, "data-sequence": String(e.sequence), "data-index": String(pos), "data-status": c.status,
      "data-mark": mark },
    h("span", { class: "arknb-row-time" }, fmtTime((Number(e.timestamp) || 0) - t0)),
    h("span", { class: "arknb-row-seq", title: `sequence ${e.sequence}` }, `#${index.ordinal(e) ?? e.sequence}`),
    h("span", { class: `arknb-row-type arknb-type-${family}` },
      mark ? h("span", { class: `arknb-mark-dot arknb-mark-${mark}`, "aria-hidden": "true" }, mark === "plan" ? "☑" : "✦")
        : null, e.type),
    h("span", { class: "arknb-row-summary", title: c.summary }, c.summary));
  }

  // -- filtering ---------------------------------------------------------------------

  function predicate() {
    const runs = filters.run ? index.descendants(filters.run) : null;
    const span = filters.span === null ? null : index.spans[filters.span];
    const inSpan = span ? index.memberOf(span) : null;
    const q = filters.query.trim().toLowerCase();
    return (e, pos) => {
      if (filters.type && e.type !== filters.type) return false;
      if (runs && !runs.has(String(e.run_id))) return false;
      if (filters.hideChunks && e.type === "llm.chunk") return false;
      if (inSpan && !inSpan(e, pos)) return false;
      if (!q) return true;
      const c = info(e);
      if (c.hay === null) {
        let payload = "";
        try { payload = JSON.stringify(e.payload); } catch { /* unprintable: search type and summary */ }
        c.hay = `${e.type}\n${c.summary}\n${payload}`.toLowerCase();
      }
      return c.hay.includes(q);
    };
  }

  function refilter() {
    if (job) job.cancelled = true;
    const me = { cancelled: false, pos: store.lo, out: [], test: predicate() };
    job = me;
    const step = () => {
      if (me.cancelled) return;
      const until = performance.now() + SLICE_MS;
      me.pos = Math.max(me.pos, store.lo);
      while (me.pos < store.hi) {
        if (me.test(store.at(me.pos), me.pos)) me.out.push(me.pos);
        me.pos++;
        if ((me.pos & 1023) === 0 && performance.now() > until) break;
      }
      if (me.pos < store.hi) { updateCount(me.pos); setTimeout(step, 0); return; }
      job = null;
      shown = me.out;
      list.setCount(shown.length, { reset: true });
      syncSelection();
      // The open detail follows the filters: it says when they hide its row (with "clear filters").
      if (selected !== null) select(selected, false);
      updateCount();
    };
    step();
  }

  function appendRange(from, to) {
    if (job) return; // the running refilter reads up to the store's end itself
    const test = predicate();
    for (let pos = from; pos < to; pos++) if (test(store.at(pos), pos)) shown.push(pos);
    if (shown.length && shown[0] < store.lo) {
      // The view dropped its oldest events: forget their rows.
      let cut = 0;
      while (cut < shown.length && shown[cut] < store.lo) cut++;
      shown = shown.slice(cut);
      list.setCount(shown.length, { reset: true });
      return;
    }
    list.setCount(shown.length);
  }

  function updateCount(progressPos) {
    const size = store.size;
    count.textContent = progressPos === undefined
      ? `${thousands(shown.length)} of ${thousands(size)} events`
      : `filtering… ${Math.floor((100 * (progressPos - store.lo)) / Math.max(1, size))}%`;
  }

  // -- selects and the rest of the chrome --------------------------------------------

  function refreshOptions() {
    const keep = (sel, values, all, label) => {
      if (sel.options.length === values.length + 1) return;
      const v = sel.value;
      sel.replaceChildren(h("option", { value: "" }, all), ...values.map((x) => h("option", { value: x }, label(x))));
      sel.value = values.includes(v) ? v : "";
    };
    keep(typeSel, [...index.types].sort(), "all types", (x) => x);
    keep(runSel, index.runOrder, "all runs", (x) => x);
  }

  function updateTotals() {
    const t = index.totals(filters.run);
    const run = filters.run ? index.runs.get(filters.run) : null;
    const duration = run ? (run.end === null ? "running" : fmtMs((run.end - run.start) * 1000)) : "";
    const parts = [filters.run ? `run ${filters.run}` : `${t.runs} run${t.runs === 1 ? "" : "s"}`,
      `${t.turns} turn${t.turns === 1 ? "" : "s"}`, `${t.tool_calls} tool call${t.tool_calls === 1 ? "" : "s"}`,
      `${thousands(t.tokens_in)} in / ${thousands(t.tokens_out)} out tokens`,
      `${t.errors} error${t.errors === 1 ? "" : "s"}`];
    if (t.denied) parts.push(`${t.denied} denied`);
    if (t.reused) parts.push(`${t.reused} reused from the record`);
    if (t.settled) parts.push(`${t.settled} settled by a person`);
    if (duration) parts.push(duration);
    totals.textContent = parts.join(" · ");
    totals.dataset.errors = String(t.errors);
  }

  function updateOlder() {
    const parts = [];
    const n = store.olderInKernel;
    const page = model.get("page_size") || 2000;
    if (store.loadingOlder) parts.push(h("span", { class: "arknb-muted" }, "loading older events…"));
    else if (n > 0) {
      parts.push(h("button", { type: "button", class: "arknb-btn arknb-btn-small", testid: "arknb-timeline-older",
        onclick: () => s.older(page) }, `${thousands(n)} older event${n === 1 ? "" : "s"}: load ${thousands(Math.min(n, page))}`));
      if (n > page && n <= 50 * page) {
        parts.push(h("button", { type: "button", class: "arknb-btn arknb-btn-small", testid: "arknb-timeline-older-all",
          onclick: () => s.older(n) }, "load all"));
      }
    } else if (model.get("paged") && !store.exhausted && store.started) {
      parts.push(h("button", { type: "button", class: "arknb-btn arknb-btn-small", testid: "arknb-timeline-older",
        onclick: () => s.older(page) }, "older events in the store: load"));
    } else if (store.lo > 0 && store.lo <= store.kernelFirst && !model.get("paged")) {
      // Positions [0, lo) are in neither this view nor the kernel. A view that has held
      // everything from the start misses nothing, however much the kernel forgot since.
      parts.push(h("span", { class: "arknb-muted", testid: "arknb-timeline-forgotten" },
        `${thousands(store.lo)} earlier events are no longer kept (max_events)`));
    }
    if (store.olderError) parts.push(h("span", { class: "arknb-error", testid: "arknb-timeline-older-error" }, store.olderError));
    older.replaceChildren(...parts);
    older.hidden = parts.length === 0;
  }

  let waterfallTimer = null;
  const collapsed = new Set(); // span ids whose inner spans are folded away (a sub-agent's run, ...)

  function drawWaterfall(force) {
    const open = index.spans.some((sp) => sp.end === null);
    if (!force && waterfallVersion === index.version && !open) return;
    const wait = lastWaterfall + WATERFALL_MS - performance.now();
    if (!force && wait > 0) {
      // At most a few redraws a second: the rows update every frame, the bars may wait.
      if (waterfallTimer === null) waterfallTimer = setTimeout(() => { waterfallTimer = null; drawWaterfall(true); }, wait);
      return;
    }
    if (waterfallTimer !== null) { clearTimeout(waterfallTimer); waterfallTimer = null; }
    lastWaterfall = performance.now();
    waterfallVersion = index.version;
    renderWaterfall(waterfall, index, { runs: filters.run ? index.descendants(filters.run) : null,
      activeSpan: filters.span, onPick: pickSpan, now: index.tEnd ?? 0, collapsed, onToggle: toggleSpan });
  }

  function toggleSpan(id) {
    if (collapsed.has(id)) collapsed.delete(id); else collapsed.add(id);
    drawWaterfall(true);
    const row = waterfall.querySelector(`[data-span='${id}']`);
    if (row) row.focus();
  }

  function pickSpan(id) {
    filters.span = filters.span === id ? null : id;
    const sp = filters.span === null ? null : index.spans[filters.span];
    spanChip.hidden = !sp;
    spanChip.textContent = sp ? `${sp.kind}: ${sp.label} ×` : "";
    drawWaterfall(true);
    refilter();
  }

  function syncSelection() {
    if (selected === null) { list.setSelected(-1); return; }
    list.setSelected(indexOfPos(selected));
  }

  function indexOfPos(pos) {
    let lo = 0, hi = shown.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (shown[mid] === pos) return mid;
      if (shown[mid] < pos) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
  }

  function select(pos, scroll = true) {
    selected = pos;
    const i = indexOfPos(pos);
    list.setSelected(i);
    if (scroll && i >= 0) list.setActive(i, false);
    renderDetail(detail, store, pos, { t0: index.t0 ?? 0, onSelect: (p) => select(p), hiddenByFilter: i < 0,
      clearFilters });
  }

  function clearFilters() {
    Object.assign(filters, { type: "", run: "", span: null, hideChunks: false, query: "" });
    search.value = ""; typeSel.value = ""; runSel.value = ""; hideChunks.checked = false;
    spanChip.hidden = true;
    drawWaterfall(true);
    refilter();
    if (selected !== null) setTimeout(() => select(selected), 0);
  }

  function exportJsonl() {
    const events = [];
    for (let pos = store.lo; pos < store.hi; pos++) events.push(store.at(pos));
    const text = traceJsonl(events, store.lo);  // (header first: the events before lo are not in it)
    const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
    const a = h("a", { href: url, download: "arknb-trace.jsonl", hidden: true });
    root.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  search.addEventListener("input", () => { filters.query = search.value; refilter(); });
  typeSel.addEventListener("change", () => { filters.type = typeSel.value; refilter(); });
  runSel.addEventListener("change", () => {
    filters.run = runSel.value;
    if (filters.span !== null && filters.run && !index.descendants(filters.run).has(index.spans[filters.span].run_id)) {
      filters.span = null; spanChip.hidden = true;
    }
    updateTotals(); drawWaterfall(true); refilter();
  });
  hideChunks.addEventListener("change", () => { filters.hideChunks = hideChunks.checked; refilter(); });
  spanChip.addEventListener("click", () => pickSpan(filters.span));
  exportBtn.addEventListener("click", exportJsonl);

  const view = {
    update(change) {
      if (change && change.rebuild) {
        if (filters.span !== null && !index.spans[filters.span]) { filters.span = null; spanChip.hidden = true; }
        if (selected !== null && (selected < store.lo || selected >= store.hi)) { selected = null; renderDetail(detail, store, null, {}); }
        refilter();
      } else if (change) appendRange(change.from, change.to);
      refreshOptions();
      updateTotals();
      updateOlder();
      drawWaterfall(false);
      if (!job) updateCount();
    },
  };
  s.views.add(view);
  const untwin = hideStaticTwin(model.get("static_id"));
  refreshOptions();
  refilter();
  updateTotals();
  updateOlder();
  drawWaterfall(true);
  renderDetail(detail, store, null, {});
  root.dataset.ready = "true";
  return () => {
    s.views.delete(view);
    if (job) job.cancelled = true;
    if (waterfallTimer !== null) clearTimeout(waterfallTimer);
    untwin();
  };
}

export default { initialize, render };
