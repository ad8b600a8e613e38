// TraceCompareWidget front end (arknb/widgets/compare.py): two recorded traces side by
// side, aligned by model turn, with the first divergence (computed in the kernel by
// arknb.eval.first_divergence) marked. The traces are static synced traits; nothing
// streams. Text always goes through textContent (lib/dom.js): payloads are untrusted.
import { h, setChildren } from "./lib/dom.js";
import { diffView } from "./lib/diff.js";
import { jsonView } from "./lib/json_view.js";
import { callOf } from "./lib/spans.js";

const MAX_ROWS_PER_SIDE = 3000;  // DOM rows per side; beyond it a note says how many were left out

function summary(e) {
  const p = e.payload || {};
  switch (e.type) {
    case "llm.chunk": return `${p.kind || "text"} ${JSON.stringify(p.text ?? "")}`;
    case "tool.before": case "tool.after": case "tool.denied": {
      const c = callOf(p);
      return `${c.name} ${(p.call && p.call.arguments_json) || ""}`.trim();
    }
    case "llm.before": return `turn ${p.turn ?? "?"}`;
    case "llm.after": {
      const text = ((p.message || {}).contents || []).map((c) => c.text || "").join("");
      const calls = ((p.message || {}).tool_calls || []).map((c) => c.name).join(", ");
      return [text && JSON.stringify(text.length > 60 ? text.slice(0, 57) + "..." : text), calls && `→ ${calls}`]
        .filter(Boolean).join(" ");
    }
    case "hook.decision": return `${p.hook || "?"} ${p.action || "?"} (${p.slot || "?"})`;
    case "agent.success": case "agent.error": return String(p.stop_reason ?? "");
    default: return "";
  }
}

/** A payload without the keys that differ between any two runs (ids, times), as compared. */
export function stripIgnored(value, ignored) {
  if (Array.isArray(value)) return value.map((v) => stripIgnored(v, ignored));
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) if (!ignored.has(k)) out[k] = stripIgnored(v, ignored);
  return out;
}

/** Group event indices by turn: [{turn, expected: [i...], actual: [j...]}], turns ascending. */
export function alignByTurn(expectedTurns, actualTurns, keep) {
  const groups = new Map();
  const add = (side, turns) => turns.forEach((turn, i) => {
    if (!keep(side, i)) return;
    if (!groups.has(turn)) groups.set(turn, { turn, expected: [], actual: [] });
    groups.get(turn)[side].push(i);
  });
  add("expected", expectedTurns);
  add("actual", actualTurns);
  return [...groups.values()].sort((a, b) => a.turn - b.turn);
}

function render({ model, el }) {
  const hideChunks = h("input", { type: "checkbox", testid: "arknb-compare-hide-chunks" });
  const jump = h("button", { class: "arknb-btn", type: "button", testid: "arknb-compare-jump" }, "Go to divergence");
  const verdict = h("div", { class: "arknb-cmp-verdict", testid: "arknb-compare-summary" });
  const body = h("div", { class: "arknb-cmp-body", testid: "arknb-compare-body" });
  const detail = h("div", { class: "arknb-detail arknb-cmp-detail", testid: "arknb-compare-detail" },
    h("div", { class: "arknb-muted" }, "Select an event to compare its payloads."));
  const root = h("div", { class: "arknb arknb-compare", testid: "arknb-compare" },
    h("div", { class: "arknb-toolbar" }, h("span", { class: "arknb-title" }, "Trace comparison"),
      h("label", { class: "arknb-check" }, hideChunks, " hide chunks"), h("span", { class: "arknb-spacer" }), jump),
    verdict, body, detail);
  el.replaceChildren(root);

  function data() {
    return {
      expected: model.get("expected") || [], actual: model.get("actual") || [],
      expectedTurns: model.get("expected_turns") || [], actualTurns: model.get("actual_turns") || [],
      divergence: model.get("divergence") || null, labels: model.get("labels") || ["expected", "actual"],
      ignored: new Set(model.get("ignored_keys") || []),
    };
  }

  function select(d, side, i) {
    for (const row of body.querySelectorAll("[aria-pressed='true']")) row.setAttribute("aria-pressed", "false");
    for (const row of body.querySelectorAll(`[data-index='${i}']`)) row.setAttribute("aria-pressed", "true");
    const a = d.expected[i], b = d.actual[i];
    setChildren(detail,
      h("div", { class: "arknb-detail-head" }, h("strong", {}, `event ${i}`),
        ` · ${d.labels[0]}: ${a ? a.type : "—"} · ${d.labels[1]}: ${b ? b.type : "—"}`),
      a && b ? h("div", {}, h("div", { class: "arknb-muted" },
        `${d.labels[0]} → ${d.labels[1]} (payload as compared: ids and times left out)`),
        diffView(stripIgnored(a.payload, d.ignored), stripIgnored(b.payload, d.ignored))) : null,
      jsonView(side === "expected" ? (a || b) : (b || a), { openDepth: 1 }));
  }

  function cell(d, side, i) {
    if (i === undefined) return h("div", { class: "arknb-cmp-cell arknb-cmp-empty" });
    const e = d[side][i];
    const div = d.divergence;
    const state = !div ? "same" : i < div.index ? "same" : i === div.index ? "diverges" : "after";
    const row = h("button", { type: "button", class: `arknb-cmp-cell arknb-cmp-${state}`, testid: "arknb-compare-row",
      "data-side": side, "data-index": String(i), "data-type": e.type, "data-state": state, "aria-pressed": "false",
      title: state === "diverges" ? div.text : null },
      h("span", { class: "arknb-cmp-index" }, `${i}`),
      h("span", { class: `arknb-cmp-type arknb-cmp-type-${e.type.split(".")[0]}` }, e.type),
      h("span", { class: "arknb-cmp-summary" }, summary(e)));
    row.addEventListener("click", () => select(d, side, i));
    return row;
  }

  function draw() {
    const d = data();
    const div = d.divergence;
    setChildren(verdict, div
      ? [h("span", { class: "arknb-cmp-badge arknb-cmp-badge-diverges" }, "diverges"), " ",
         h("span", { testid: "arknb-compare-divergence-text" }, div.text)]
      : [h("span", { class: "arknb-cmp-badge arknb-cmp-badge-same" }, "same"), " ",
         `the traces match (${d.expected.length} events; ids, sequence numbers and timestamps ignored)`]);
    jump.disabled = !div;
    const keep = (side, i) => {
      if (div && i === div.index) return true;   // the divergence is always shown
      return !(hideChunks.checked && d[side][i].type === "llm.chunk");
    };
    const groups = alignByTurn(d.expectedTurns, d.actualTurns, keep);
    const head = h("div", { class: "arknb-cmp-head" },
      h("div", { testid: "arknb-compare-label-expected" }, `${d.labels[0]} · ${d.expected.length} events`),
      h("div", { testid: "arknb-compare-label-actual" }, `${d.labels[1]} · ${d.actual.length} events`));
    const sections = [];
    let drawn = 0, skipped = 0;
    for (const g of groups) {
      const diverges = div && div.turn === g.turn;
      const rows = [];
      for (let k = 0; k < Math.max(g.expected.length, g.actual.length); k++) {
        if (drawn >= MAX_ROWS_PER_SIDE) { skipped++; continue; }
        drawn++;
        rows.push(h("div", { class: "arknb-cmp-pair" }, cell(d, "expected", g.expected[k]), cell(d, "actual", g.actual[k])));
      }
      sections.push(h("section", { class: `arknb-cmp-turn${diverges ? " arknb-cmp-turn-diverges" : ""}`,
        testid: "arknb-compare-turn", "data-turn": String(g.turn), "data-diverges": diverges ? "true" : "false" },
        h("div", { class: "arknb-cmp-turn-head" }, g.turn ? `turn ${g.turn}` : "before the first model call",
          h("span", { class: "arknb-muted" }, ` · ${g.expected.length} | ${g.actual.length} events`),
          diverges ? h("span", { class: "arknb-cmp-badge arknb-cmp-badge-diverges" }, "first divergence") : null),
        rows));
    }
    const note = skipped ? h("div", { class: "arknb-muted" }, `${skipped} more rows not shown`) : null;
    setChildren(body, head, sections, note);
  }

  jump.addEventListener("click", () => {
    const marked = body.querySelector("[data-state='diverges']");
    if (!marked) return;
    marked.scrollIntoView({ block: "center" });
    marked.click();
  });
  hideChunks.addEventListener("change", draw);
  const redraw = () => draw();
  for (const key of ["expected", "actual", "expected_turns", "actual_turns", "divergence", "labels"])
    model.on(`change:${key}`, redraw);
  draw();
  root.dataset.ready = "true";
  return () => {
    for (const key of ["expected", "actual", "expected_turns", "actual_turns", "divergence", "labels"])
      model.off(`change:${key}`, redraw);
  };
}

export default { render };
