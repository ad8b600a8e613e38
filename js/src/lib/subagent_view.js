// A sub-agent's work inside the chat's delegate_task card: its transcript, collapsible,
// nested again for a grandchild. Entries have the chat's shapes (arknb/widgets/_transcript.py).
import { h, prettyJson } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const STATUS = { running: "running…", awaiting_approval: "awaiting approval", completed: "done",
  cancelled: "cancelled", failed: "failed", aborted: "aborted", suspended: "suspended", idle: "idle" };

function entryView(e, openState) {
  if (e.kind === "user") {
    return h("div", { class: "arknb-sub-line arknb-sub-user", testid: "arknb-sub-user" }, e.text || "");
  }
  if (e.kind === "assistant") {
    if (!e.text) return null;
    const body = h("div", { class: "arknb-md arknb-sub-assistant", testid: "arknb-sub-assistant" });
    renderMarkdown(body, e.text);
    return body;
  }
  if (e.kind === "tool") {
    const result = e.result == null ? null
      : h("div", { class: `arknb-tool-result${e.is_error ? " arknb-is-error" : ""}` });
    if (result) renderMarkdown(result, e.result);
    return h("div", { class: "arknb-card arknb-tool arknb-sub-tool", testid: "arknb-sub-tool",
      "data-call-id": e.call_id, "data-status": e.status },
      h("div", { class: "arknb-card-head" },
        h("span", { class: "arknb-tool-name" }, e.name),
        h("span", { class: `arknb-badge arknb-badge-${e.status}` }, e.status.replace("_", " "))),
      h("pre", { class: "arknb-pre" }, prettyJson(e.arguments)),
      result,
      e.subagent ? subagentView(e.subagent, openState, e.call_id) : null);
  }
  if (e.kind === "notice") return h("div", { class: "arknb-notice", "data-level": e.level || "info" }, e.text || "");
  return null;
}

/** The collapsible card of one sub-agent's transcript. `openState` (a Map) keeps each
 * card open or closed across re-renders, as the person left it (open while it works). */
export function subagentView(sub, openState, key) {
  const working = ["running", "awaiting_approval"].includes(sub.status);
  const open = openState.has(key) ? openState.get(key) : working;
  const details = h("details", { class: "arknb-subagent", testid: "arknb-subagent",
    "data-session": sub.session_id || "", "data-status": sub.status || "" },
    h("summary", {}, h("span", { class: "arknb-sub-title" }, `sub-agent ${sub.session_id || ""}`),
      h("span", { class: `arknb-badge arknb-badge-${sub.status}` }, STATUS[sub.status] || sub.status || "")),
    h("div", { class: "arknb-sub-body" }, ...(sub.entries || []).map((e) => entryView(e, openState)).filter(Boolean)));
  details.open = open;
  details.addEventListener("toggle", () => openState.set(key, details.open));
  return details;
}
