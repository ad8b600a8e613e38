// Tiny DOM builder. Text always goes through textContent: this module never parses HTML.

/**
 * h("button", {class: "x", testid: "arknb-stop", onclick: fn}, "Stop")
 * Attribute keys: `class`, `testid` (-> data-testid), `on<event>` (listener),
 * `dataset` (object), anything else via setAttribute (null/false skips it).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "testid") el.setAttribute("data-testid", value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Replace `el`'s children; null, undefined and false children are skipped (never "null"). */
export function setChildren(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Pretty JSON text of a value, or the string itself when it is not JSON. */
export function prettyJson(value) {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch { return value; }
  }
  try { return JSON.stringify(value, null, 2) ?? String(value); } catch { return String(value); }
}

/** Call `fn` at most once per animation frame (setTimeout where rAF is missing). */
export function frameScheduler(fn) {
  let pending = false;
  const raf = typeof requestAnimationFrame === "function"
    ? requestAnimationFrame : (cb) => setTimeout(cb, 16);
  return () => {
    if (pending) return;
    pending = true;
    raf(() => { pending = false; fn(); });
  };
}
