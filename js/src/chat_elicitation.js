// The chat's elicitation card (arknb/widgets/_chat_elicitation.py, DESIGN §15): a tool's
// server asks the person a few values mid-call. The item's detail holds the message and a
// flat JSON Schema; this renders it as a small form with Accept / Decline / Cancel. Every
// text from the server (message, titles, descriptions) goes through textContent (h()).
import { h } from "./lib/dom.js";

// What the person typed, by question and field: the approvals box is rebuilt whenever the
// chat's state changes, and a half-filled form must survive that.
const drafts = new Map();

function draftOf(id) {
  if (!drafts.has(id)) drafts.set(id, new Map());
  return drafts.get(id);
}

function field(name, spec, required, usable, draft) {
  const label = spec.title || name;
  const id = `arknb-elicit-${name}-${Math.random().toString(36).slice(2, 8)}`;
  let input;
  if (Array.isArray(spec.enum)) {
    input = h("select", { id, name, testid: `arknb-elicit-field-${name}`, disabled: !usable },
      ...spec.enum.map((v, i) => h("option", { value: String(v) },
        String((spec.enumNames && spec.enumNames[i]) || v))));
    if (spec.default !== undefined) input.value = String(spec.default);
  } else if (spec.type === "boolean") {
    input = h("input", { id, name, type: "checkbox", testid: `arknb-elicit-field-${name}`, disabled: !usable });
    input.checked = spec.default === true;
  } else {
    const type = spec.type === "integer" || spec.type === "number" ? "number" : "text";
    input = h("input", { id, name, type, class: "arknb-reason", testid: `arknb-elicit-field-${name}`,
      disabled: !usable, step: spec.type === "integer" ? "1" : spec.type === "number" ? "any" : null,
      "aria-required": required ? "true" : null });
    if (spec.default !== undefined && spec.default !== null) input.value = String(spec.default);
  }
  if (draft.has(name)) {
    if (spec.type === "boolean") input.checked = draft.get(name); else input.value = draft.get(name);
  }
  const keep = () => draft.set(name, spec.type === "boolean" ? input.checked : input.value);
  input.addEventListener("input", keep);
  input.addEventListener("change", keep);
  const read = () => {
    if (spec.type === "boolean") return input.checked;
    const raw = input.value;
    if (raw === "") return undefined;
    if (spec.type === "integer") return Number.parseInt(raw, 10);
    if (spec.type === "number") return Number(raw);
    return raw;
  };
  const row = h("label", { class: "arknb-elicit-field", for: id },
    h("span", { class: "arknb-elicit-label" }, `${label}${required ? " *" : ""}`),
    input, spec.description ? h("span", { class: "arknb-muted" }, spec.description) : null);
  return { name, row, read };
}

/** The card for one question; `onAnswer(action, content)` sends the answer. */
export function elicitationCard(a, { usable, busy, decision, error, onAnswer }) {
  const detail = a.detail || {};
  const schema = detail.schema || {};
  const required = new Set(schema.required || []);
  const draft = draftOf(a.approval_id);
  const fields = Object.entries(schema.properties || {})
    .map(([n, s]) => field(n, s || {}, required.has(n), usable, draft));
  const content = () => {
    const out = {};
    for (const f of fields) { const v = f.read(); if (v !== undefined) out[f.name] = v; }
    return out;
  };
  const btn = (text, action, cls) => h("button", { class: `arknb-btn ${cls}`, type: "button", disabled: !usable,
    testid: `arknb-elicit-${action}`, onclick: () => onAnswer(action, action === "accept" ? content() : null) }, text);
  if (decision) drafts.delete(a.approval_id);
  let actions;
  if (decision) {
    actions = h("div", { class: "arknb-decision", testid: "arknb-approval-decision" },
      decision === "approved" ? "✓ answered" : `✗ ${a.note || decision}`);
  } else if (busy) {
    actions = h("span", { class: "arknb-muted", testid: "arknb-approval-deciding" }, "sending…");
  } else {
    actions = h("div", { class: "arknb-approval-actions" }, btn("Accept", "accept", "arknb-btn-primary"),
      btn("Decline", "decline", "arknb-btn-danger"), btn("Cancel", "cancel", ""));
  }
  const where = [detail.server ? `server ${detail.server}` : null, detail.tool ? `tool ${detail.tool}` : null]
    .filter(Boolean).join(" · ");
  return h("div", { class: "arknb-card arknb-approval arknb-elicitation", testid: "arknb-elicitation",
    "data-approval-id": a.approval_id, "data-deciding": String(!!busy), role: "group",
    "aria-label": `Question from ${detail.server || a.tool_name}` },
    h("div", { class: "arknb-card-head" },
      h("span", { class: "arknb-tool-name" }, a.tool_name),
      h("span", { class: "arknb-badge arknb-badge-awaiting_approval" }, "question")),
    where ? h("div", { class: "arknb-muted" }, where) : null,
    h("div", { class: "arknb-elicit-message", testid: "arknb-elicit-message" }, detail.message || a.reason || ""),
    h("form", { class: "arknb-elicit-form", onsubmit: (ev) => ev.preventDefault() }, ...fields.map((f) => f.row)),
    actions,
    error && !decision ? h("div", { class: "arknb-error", testid: "arknb-approval-error", role: "alert" }, error) : null);
}

/** Where an approval card's call goes, for a tool from a source (an MCP server, DESIGN §15):
 * the server, the server's own tool name and the annotations it declared (untrusted hints). */
export function sourceLine(a) {
  const d = a.detail || {};
  if (d.source !== "mcp") return null;
  const hints = Object.entries(d.annotations || {}).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
  const overrides = Object.entries(d.overrides || {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return h("div", { class: "arknb-muted arknb-approval-source", testid: "arknb-approval-source-tool" },
    `MCP server ${d.server} · tool ${d.tool} · annotations: ${hints.length ? hints.join(", ") : "none"}`
      + (overrides.length ? ` · your overrides: ${overrides.join(", ")}` : ""));
}
