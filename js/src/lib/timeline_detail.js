// The detail pane of one event: what it is (type, sequence, run, time, status, one
// line), a hook decision explained (hook_view.js), then the whole event as a JSON tree.
import { h, setChildren } from "./dom.js";
import { jsonView } from "./json_view.js";
import { hookDecisionView } from "./hook_view.js";
import { contextView } from "./context_view.js";
import { status, summary } from "./timeline_summary.js";

const STATUS_WORD = { ok: "success", error: "error", denied: "denied", deferred: "deferred", cancelled: "cancelled",
  warn: "warning", changed: "changed" };

export function renderDetail(el, store, pos, { t0, onSelect, hiddenByFilter, clearFilters }) {
  const e = pos === null ? null : store.at(pos);
  if (!e) {
    setChildren(el, h("div", { class: "arknb-muted" }, "Select an event (click, or arrow keys and Enter) to see it here."));
    return;
  }
  const state = status(e);
  const rel = typeof e.timestamp === "number" ? `+${(e.timestamp - t0).toFixed(3)}s` : "";
  setChildren(el,
    h("div", { class: "arknb-detail-head" },
      h("strong", {}, e.type), ` #${e.sequence} · run ${e.run_id} · ${rel}`,
      state ? h("span", { class: `arknb-badge arknb-status-${state}`, testid: "arknb-detail-status" }, STATUS_WORD[state]) : null),
    h("div", { class: "arknb-detail-summary", testid: "arknb-detail-summary" }, summary(e)),
    hiddenByFilter ? h("div", { class: "arknb-muted" }, "This row is hidden by the filters. ",
      h("button", { type: "button", class: "arknb-link", onclick: clearFilters }, "clear filters")) : null,
    e.type === "hook.decision" ? hookDecisionView(store, pos, onSelect) : null,
    e.type === "llm.before" ? contextView(e.payload && e.payload.context) : null,
    jsonView(e, { openDepth: 2 }));
}
