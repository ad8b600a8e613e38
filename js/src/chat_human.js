// Cards for what a graph run waits for (DESIGN §16): a human node's question with a form
// built from its answer's JSON Schema (Approve / Reject for a bool, a text, number or
// choice field for the other simple types, JSON otherwise), and the three choices of a
// step in doubt. Used by the GraphWidget and, through one hook, by the ChatWidget (the
// `humans` trait). Text goes through textContent only: the question is untrusted.
import { h } from "./lib/dom.js";

const DOUBT = [["rerun", "Run again"], ["done", "Mark done"], ["failed", "Mark failed"]];

function parseValue(schema, raw) {
  const type = schema && schema.type;
  if (type === "integer") { const n = Number(raw); return Number.isInteger(n) ? n : raw; }
  if (type === "number") { const n = Number(raw); return raw.trim() !== "" && !Number.isNaN(n) ? n : raw; }
  if (type === "string" || (schema && schema.enum)) return raw;
  try { return JSON.parse(raw); } catch { return raw; }
}

function answerForm(item, answer) {
  const schema = item.schema || {};
  if (schema.type === "boolean") {
    return h("div", { class: "arknb-approval-actions" },
      h("button", { class: "arknb-btn arknb-btn-primary", testid: "arknb-human-approve", type: "button",
        onclick: () => answer(true) }, "Approve"),
      h("button", { class: "arknb-btn arknb-btn-danger", testid: "arknb-human-reject", type: "button",
        onclick: () => answer(false) }, "Reject"));
  }
  let field;
  if (Array.isArray(schema.enum)) {
    field = h("select", { class: "arknb-input", testid: "arknb-human-input", "aria-label": "Answer" },
      ...schema.enum.map((v) => h("option", { value: String(v) }, String(v))));
  } else if (["string", "integer", "number"].includes(schema.type)) {
    field = h("input", { class: "arknb-input", testid: "arknb-human-input", "aria-label": "Answer",
      type: schema.type === "string" ? "text" : "number" });
  } else {
    field = h("textarea", { class: "arknb-input", testid: "arknb-human-input", rows: "2", "aria-label": "Answer (JSON)" });
  }
  const submit = () => answer(parseValue(schema, field.value));
  field.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); submit(); } });
  return h("div", { class: "arknb-approval-actions" }, field,
    h("button", { class: "arknb-btn arknb-btn-primary", testid: "arknb-human-send", type: "button", onclick: submit },
      "Answer"));
}

/** One card for `item` (a PendingStep dict); `act(message)` sends the decision. */
export function humanCard(item, act) {
  const head = h("div", { class: "arknb-card-head" },
    h("strong", {}, item.kind === "human" ? "A person decides" : item.kind === "in_doubt" ? "In doubt" : "Approval"),
    h("span", { class: "arknb-muted" }, `${item.node} · step ${item.step}`));
  const question = h("div", { class: "arknb-human-question", testid: "arknb-human-question" }, item.question || "");
  let actions;
  if (item.kind === "human") {
    actions = answerForm(item, (value) => act({ type: "answer_human", item_id: item.item_id, value }));
  } else if (item.kind === "in_doubt") {
    actions = h("div", { class: "arknb-approval-actions" }, ...DOUBT.map(([choice, label]) =>
      h("button", { class: "arknb-btn", type: "button", testid: `arknb-human-${choice}`,
        onclick: () => act({ type: "decide_graph", item_id: item.item_id, choice,
          value: choice === "failed" ? "marked failed in the notebook" : null }) }, label)));
  } else {
    const call = item.detail || {};
    question.textContent = `${item.question || ""} ${call.tool ? `${call.tool}(${JSON.stringify(call.arguments || {})})` : ""}`.trim();
    actions = h("div", { class: "arknb-approval-actions" },
      h("button", { class: "arknb-btn arknb-btn-primary", type: "button", testid: "arknb-human-approve",
        onclick: () => act({ type: "decide_graph", item_id: item.item_id, choice: "approve" }) }, "Approve"),
      h("button", { class: "arknb-btn arknb-btn-danger", type: "button", testid: "arknb-human-reject",
        onclick: () => act({ type: "decide_graph", item_id: item.item_id, choice: "deny" }) }, "Deny"));
  }
  return h("div", { class: "arknb-card arknb-approval arknb-human", testid: "arknb-human-card",
    dataset: { item: item.item_id, kind: item.kind } }, head, question, actions);
}

/** Draw `model.get(trait)`'s items into a box in `parent` (before `before`), kept current; returns the cleanup. */
export function mountHumanCards(model, parent, trait = "humans", before = null) {
  const box = h("div", { class: "arknb-approvals arknb-human-cards", testid: "arknb-human-cards" });
  const act = (message) => {
    for (const b of box.querySelectorAll("button")) b.disabled = true;  // until the kernel answers
    model.send(message);
  };
  const draw = () => {
    const items = model.get(trait) || [];
    box.replaceChildren(...items.map((item) => humanCard(item, act)));
    box.hidden = items.length === 0;
  };
  parent.insertBefore(box, before);
  draw();
  model.on(`change:${trait}`, draw);
  return () => { model.off(`change:${trait}`, draw); box.remove(); };
}
