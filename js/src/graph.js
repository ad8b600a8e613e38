// GraphWidget's front end (DESIGN §16): the SVG the kernel laid out and coloured
// (arknb/graphs/drawing.py: names escaped there, no layout or CDN here), the run's
// status, and a card per item waiting for a person (js/src/chat_human.js).
import { h } from "./lib/dom.js";
import { hideStaticTwin } from "./lib/static_twin.js";
import { mountHumanCards } from "./chat_human.js";

function render({ model, el }) {
  const status = h("span", { class: "arknb-status", testid: "arknb-graph-status", role: "status" });
  const error = h("div", { class: "arknb-error", testid: "arknb-graph-error", role: "alert" });
  const picture = h("div", { class: "arknb-graph-picture", testid: "arknb-graph-picture" });
  const root = h("div", { class: "arknb arknb-graph-widget", testid: "arknb-graph", "data-lm-suppress-shortcuts": "true" },
    h("div", { class: "arknb-toolbar" }, h("span", { class: "arknb-title" }, `Graph ${model.get("graph_name") || ""}`),
      status), error, picture);
  const draw = () => {
    // The kernel built this SVG from escaped text only (drawing.py); it is never model output.
    picture.innerHTML = model.get("svg") || "";
    status.textContent = (model.get("status") || "").replace(/_/g, " ");
    root.dataset.status = model.get("status") || "";
    error.textContent = model.get("error") || "";
    error.hidden = !model.get("error");
  };
  const names = ["change:svg", "change:status", "change:error"];
  for (const name of names) model.on(name, draw);
  el.replaceChildren(root);
  const unmount = mountHumanCards(model, root, "pending");
  const untwin = hideStaticTwin(model.get("static_id"));
  draw();
  root.dataset.ready = "true";
  return () => {
    for (const name of names) model.off(name, draw);
    unmount();
    untwin();
  };
}

export default { render };
