// ChatWidget front end (arknb/widgets/chat.py). State: the `transcript`, `approvals`,
// `status`, `read_only` and `error` traits, plus batched `delta` messages folded in
// once per animation frame. Actions go back as typed messages (see _protocol.py).
import { Action, Msg } from "./lib/protocol.js";
import { applyOp } from "./lib/stream.js";
import { h, frameScheduler, prettyJson, setChildren } from "./lib/dom.js";
import { renderMarkdown } from "./lib/markdown.js";
import { diffView } from "./lib/diff.js";

const stores = new WeakMap();
const STREAM_RENDER_MS = 60; // re-render a streaming answer's markdown at most this often

/** One per model: the transcript as this page knows it, shared by all its views. */
function storeFor(model) {
  let store = stores.get(model);
  if (store) return store;
  store = {
    entries: [], byId: new Map(), lengths: new Map(), queue: [], snapshotPending: true,
    helloSent: false, views: new Set(), results: new Set(), nextRequest: 1,
  };
  const flush = () => {
    const changed = new Set();
    let reset = false;
    if (store.snapshotPending) {
      store.snapshotPending = false;
      store.helloSent = false;
      const snap = model.get("transcript") || {};
      store.entries = (snap.entries || []).map((e) => ({ ...e }));
      store.byId = new Map(store.entries.map((e) => [e.id, e]));
      store.lengths = new Map();
      reset = true;
    }
    const ops = store.queue;
    store.queue = [];
    for (const op of ops) {
      const outcome = applyOp(store.byId, store.lengths, op);
      if (outcome === "applied") changed.add(op[1]);
      else if (outcome === "gap" && !store.helloSent) {
        // We missed part of the stream (a fresh tab, a late view): ask for a snapshot.
        store.helloSent = true;
        model.send({ type: Action.HELLO });
      }
    }
    for (const view of store.views) view.update(reset, changed);
  };
  store.schedule = frameScheduler(flush);
  store.flushNow = flush;
  model.on("change:transcript", () => { store.snapshotPending = true; store.schedule(); });
  model.on("msg:custom", (msg) => {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === Msg.DELTA && Array.isArray(msg.ops)) {
      for (const op of msg.ops) store.queue.push(op);
      store.schedule();
    } else if (msg.type === Msg.ACTION_RESULT) {
      for (const listener of store.results) listener(msg);
    }
  });
  store.request = (payload) => {
    const request_id = `r${store.nextRequest++}`;
    model.send({ ...payload, request_id });
    return request_id;
  };
  stores.set(model, store);
  return store;
}

function initialize({ model }) {
  storeFor(model);
  // The snapshot trait may predate text still streaming: ask for a fresh one.
  model.send({ type: Action.HELLO });
}

const STATUS_LABEL = {
  idle: "idle", running: "running", awaiting_approval: "awaiting approval", suspended: "suspended",
  completed: "completed", cancelled: "cancelled", failed: "failed", aborted: "aborted",
};

function toolStatusLabel(status) {
  return ({ requested: "requested", running: "running…", awaiting_approval: "awaiting approval",
    approved: "approved", done: "done", error: "error", denied: "denied", not_executed: "not executed",
    interrupted: "interrupted" })[status] || status;
}

function hookSentence(e) {
  const what = { before_tool_call: "arguments", after_tool_call: "result", on_model_chunk: "streamed text",
    before_model_call: "model request", after_model_call: "model response", before_run: "input",
    on_turn_completion: "turn", before_persist_state: "save" }[e.slot] || e.slot;
  const verb = { rewrite: "rewrote", proceed: "rewrote", deny: "denied", defer: "deferred", abort: "aborted",
    drop: "dropped", respond: "answered", retry: "retried", stop: "stopped", skip: "skipped",
    hold: "held" }[e.action] || e.action;
  const tool = (e.after && e.after.name) || (e.before && e.before.name);
  return `${e.hook || "a hook"} ${verb} ${what}${tool && typeof tool === "string" ? ` of ${tool}` : ""}` +
    `${e.count > 1 ? ` (×${e.count})` : ""}`;
}

function render({ model, el }) {
  const store = storeFor(model);
  const nodes = new Map();       // entry id -> {root, parts...}
  const pendingActions = new Map(); // action -> request id (stop/suspend/resume/send)
  const deciding = new Map();    // approval id -> request id while the click is in flight
  const cardErrors = new Map();  // approval id -> error from the last action_result

  const status = h("span", { class: "arknb-status", testid: "arknb-status", role: "status" });
  const stopBtn = h("button", { class: "arknb-btn arknb-btn-danger", testid: "arknb-stop", type: "button",
    title: "Cancel the run (final)" }, "Stop");
  const suspendBtn = h("button", { class: "arknb-btn", testid: "arknb-suspend", type: "button",
    title: "Pause at the next safe checkpoint" }, "Suspend");
  const resumeBtn = h("button", { class: "arknb-btn", testid: "arknb-resume", type: "button",
    title: "Continue a suspended run" }, "Resume");
  const errorBar = h("div", { class: "arknb-error", testid: "arknb-error", role: "alert" });
  const log = h("div", { class: "arknb-log", testid: "arknb-transcript", role: "log", "aria-live": "polite" });
  const approvalsBox = h("div", { class: "arknb-approvals", testid: "arknb-approvals" });
  const input = h("textarea", { class: "arknb-input", testid: "arknb-input", rows: "2",
    placeholder: "Message the agent — Enter sends, Shift+Enter adds a line", "aria-label": "Message" });
  const sendBtn = h("button", { class: "arknb-btn arknb-btn-primary", testid: "arknb-send", type: "button" }, "Send");
  const composer = h("div", { class: "arknb-composer" }, input, sendBtn);
  const root = h("div", { class: "arknb arknb-chat", testid: "arknb-chat" },
    h("div", { class: "arknb-toolbar" }, h("span", { class: "arknb-title" }, "Agent"), status,
      h("span", { class: "arknb-spacer" }), suspendBtn, resumeBtn, stopBtn),
    errorBar, log, approvalsBox, composer);
  el.replaceChildren(root);

  const act = (type, payload = {}) => {
    const id = store.request({ type, ...payload });
    pendingActions.set(type, id);
    refreshControls();
    return id;
  };
  const send = () => {
    const text = input.value.trim();
    if (!text || model.get("read_only")) return;
    act(Action.SEND, { text });
    input.value = "";
  };
  const onKey = (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send(); }
  };
  input.addEventListener("keydown", onKey);
  sendBtn.addEventListener("click", send);
  stopBtn.addEventListener("click", () => act(Action.STOP));
  suspendBtn.addEventListener("click", () => act(Action.SUSPEND));
  resumeBtn.addEventListener("click", () => act(Action.RESUME));

  function refreshControls() {
    const st = model.get("status") || "idle";
    const ro = !!model.get("read_only");
    status.textContent = STATUS_LABEL[st] || st;
    status.dataset.status = st;
    root.dataset.status = st;
    root.dataset.readOnly = String(ro);
    const busy = (a) => pendingActions.has(a);
    stopBtn.disabled = ro || busy(Action.STOP) || !["running", "suspended", "awaiting_approval"].includes(st);
    stopBtn.textContent = busy(Action.STOP) ? "Stopping…" : "Stop";
    suspendBtn.disabled = ro || busy(Action.SUSPEND) || st !== "running";
    suspendBtn.textContent = busy(Action.SUSPEND) ? "Suspending…" : "Suspend";
    resumeBtn.hidden = st !== "suspended";
    resumeBtn.disabled = ro || busy(Action.RESUME);
    stopBtn.hidden = suspendBtn.hidden = ro;
    composer.hidden = ro;
    sendBtn.disabled = busy(Action.SEND);
    const err = model.get("error") || "";
    errorBar.textContent = err;
    errorBar.hidden = !err;
  }

  // -- transcript entries ---------------------------------------------------------
  function buildEntry(e) {
    let n;
    if (e.kind === "user") {
      n = { root: h("div", { class: "arknb-msg arknb-user", testid: "arknb-user" },
        h("div", { class: "arknb-bubble arknb-plain" })) };
    } else if (e.kind === "assistant") {
      const body = h("div", { class: "arknb-md", testid: "arknb-assistant-text" });
      const reasoningBody = h("div", { class: "arknb-md arknb-reasoning-body" });
      const reasoning = h("details", { class: "arknb-reasoning", testid: "arknb-reasoning" },
        h("summary", {}, "Reasoning"), reasoningBody);
      n = { root: h("div", { class: "arknb-msg arknb-assistant", testid: "arknb-assistant" },
        h("div", { class: "arknb-bubble" }, reasoning, body)), body, reasoning, reasoningBody, renderedAt: 0 };
    } else if (e.kind === "tool") {
      n = { root: h("div", { class: "arknb-card arknb-tool", testid: "arknb-tool-card" }) };
    } else if (e.kind === "hook") {
      n = { root: h("div", { class: "arknb-hook", testid: "arknb-hook" }) };
    } else {
      n = { root: h("div", { class: "arknb-notice", testid: "arknb-notice" }) };
    }
    n.root.dataset.entryId = e.id;
    return n;
  }

  function fillEntry(e, n, force) {
    if (e.kind === "user") {
      n.root.firstChild.textContent = e.text || "";
    } else if (e.kind === "assistant") {
      n.root.dataset.streaming = String(!!e.streaming);
      const now = performance.now();
      // While streaming, re-parse the markdown at most every STREAM_RENDER_MS.
      if (force || !e.streaming || now - n.renderedAt >= STREAM_RENDER_MS) {
        n.renderedAt = now;
        if (n.text !== e.text) { renderMarkdown(n.body, e.text || ""); n.text = e.text; }
        if (n.reasoningText !== e.reasoning) { renderMarkdown(n.reasoningBody, e.reasoning || ""); n.reasoningText = e.reasoning; }
      } else if (!n.retry) {
        n.retry = setTimeout(() => {
          n.retry = null;
          const latest = store.byId.get(e.id);
          if (latest && nodes.get(e.id) === n) fillEntry(latest, n, true);
        }, STREAM_RENDER_MS);
      }
      n.reasoning.hidden = !e.reasoning;
      n.root.hidden = !e.text && !e.reasoning && !e.streaming;
    } else if (e.kind === "tool") {
      n.root.dataset.callId = e.call_id;
      n.root.dataset.status = e.status;
      const result = e.result === null || e.result === undefined ? null
        : h("div", { class: `arknb-tool-result${e.is_error ? " arknb-is-error" : ""}`, testid: "arknb-tool-result" });
      if (result) renderMarkdown(result, e.result);
      setChildren(n.root,
        h("div", { class: "arknb-card-head" },
          h("span", { class: "arknb-tool-name" }, e.name),
          h("span", { class: `arknb-badge arknb-badge-${e.status}`, testid: "arknb-tool-status" }, toolStatusLabel(e.status)),
          e.duration_ms != null ? h("span", { class: "arknb-muted" }, `${Math.round(e.duration_ms)} ms`) : null),
        h("details", { class: "arknb-args" }, h("summary", {}, "arguments"),
          h("pre", { class: "arknb-pre", testid: "arknb-tool-args" }, prettyJson(e.arguments))),
        e.reason ? h("div", { class: "arknb-muted" }, `reason: ${e.reason}`) : null,
        result);
    } else if (e.kind === "hook") {
      n.root.dataset.hook = e.hook;
      n.root.dataset.action = e.action;
      const details = h("details", { class: "arknb-hook-details" },
        h("summary", {}, h("span", { class: "arknb-hook-text" }, hookSentence(e)),
          e.reason ? h("span", { class: "arknb-muted" }, ` — ${e.reason}`) : null));
      details.addEventListener("toggle", () => {
        if (details.open && !details.querySelector(".arknb-diff")) details.append(diffView(e.before, e.after));
      }, { once: true });
      n.root.replaceChildren(details);
    } else {
      n.root.dataset.level = e.level || "info";
      n.root.textContent = e.text || "";
    }
  }

  function update(reset, changed) {
    if (reset) {
      const keep = new Set(store.entries.map((e) => e.id));
      for (const [id, n] of nodes) if (!keep.has(id)) { n.root.remove(); nodes.delete(id); }
      let prev = null;
      for (const e of store.entries) {
        let n = nodes.get(e.id);
        if (!n) { n = buildEntry(e); nodes.set(e.id, n); }
        fillEntry(e, n, true);
        const want = prev ? prev.nextSibling : log.firstChild;
        if (want !== n.root) log.insertBefore(n.root, want);
        prev = n.root;
      }
    } else {
      for (const id of changed) {
        const e = store.byId.get(id), n = nodes.get(id);
        if (e && n) fillEntry(e, n, false);
      }
    }
    const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
    if (nearBottom || reset) log.scrollTop = log.scrollHeight;
    refreshControls();
  }

  // -- approvals --------------------------------------------------------------------
  function renderApprovals() {
    const ro = !!model.get("read_only");
    const items = model.get("approvals") || [];
    const live = new Set(items.map((a) => a.approval_id));
    for (const id of [...deciding.keys()]) if (!live.has(id)) deciding.delete(id);
    approvalsBox.replaceChildren(...items.map((a) => {
      if (a.kind === "in_doubt") return inDoubtCard(a, ro);
      const busy = a.deciding || deciding.has(a.approval_id);
      const err = cardErrors.get(a.approval_id) || a.error;
      const reason = h("input", { class: "arknb-reason", testid: "arknb-deny-reason", type: "text",
        placeholder: "reason (optional)", "aria-label": `Reason for denying ${a.tool_name}` });
      const approve = h("button", { class: "arknb-btn arknb-btn-primary", testid: "arknb-approve", type: "button",
        disabled: busy }, "Approve");
      const deny = h("button", { class: "arknb-btn arknb-btn-danger", testid: "arknb-deny", type: "button",
        disabled: busy }, "Deny");
      approve.addEventListener("click", () => decide(a.approval_id, Action.APPROVE));
      deny.addEventListener("click", () => decide(a.approval_id, Action.DENY, reason.value.trim()));
      reason.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") { ev.preventDefault(); decide(a.approval_id, Action.DENY, reason.value.trim()); }
      });
      return h("div", { class: "arknb-card arknb-approval", testid: "arknb-approval",
        "data-approval-id": a.approval_id, "data-deciding": String(!!busy), role: "group",
        "aria-label": `Approval needed for ${a.tool_name}` },
        h("div", { class: "arknb-card-head" },
          h("span", { class: "arknb-tool-name" }, a.tool_name),
          a.risk_level ? h("span", { class: "arknb-badge arknb-badge-awaiting_approval" }, a.risk_level) : null),
        a.reason ? h("div", { class: "arknb-muted" }, a.reason) : null,
        h("pre", { class: "arknb-pre" }, prettyJson(a.arguments)),
        ro ? h("div", { class: "arknb-muted" }, "pending (read-only replay)")
          : h("div", { class: "arknb-approval-actions" },
            busy ? h("span", { class: "arknb-muted", testid: "arknb-approval-deciding" }, "deciding…")
              : [approve, reason, deny]),
        err ? h("div", { class: "arknb-error", testid: "arknb-approval-error", role: "alert" }, err) : null);
    }));
    approvalsBox.hidden = items.length === 0;
  }

  // A call a crash left with an unknown fate (DESIGN §13): the person reruns it, or says
  // what it did (its result text) or that it failed (the reason).
  function inDoubtCard(a, ro) {
    const busy = a.deciding || deciding.has(a.approval_id);
    const err = cardErrors.get(a.approval_id) || a.error;
    const text = h("input", { class: "arknb-reason", testid: "arknb-in-doubt-text", type: "text",
      placeholder: "what it returned, or why it failed", "aria-label": `Outcome of ${a.tool_name}` });
    const button = (testid, label, cls, type) => {
      const b = h("button", { class: `arknb-btn ${cls}`, testid, type: "button", disabled: busy }, label);
      b.addEventListener("click", () => decide(a.approval_id, type, text.value.trim()));
      return b;
    };
    return h("div", { class: "arknb-card arknb-approval arknb-in-doubt", testid: "arknb-in-doubt",
      "data-approval-id": a.approval_id, "data-deciding": String(!!busy), role: "group",
      "aria-label": `${a.tool_name} may or may not have run` },
      h("div", { class: "arknb-card-head" },
        h("span", { class: "arknb-tool-name" }, a.tool_name),
        h("span", { class: "arknb-badge arknb-badge-awaiting_approval" }, "in doubt")),
      a.reason ? h("div", { class: "arknb-muted" }, a.reason) : null,
      h("pre", { class: "arknb-pre" }, prettyJson(a.arguments)),
      ro ? h("div", { class: "arknb-muted" }, "in doubt (read-only replay)")
        : h("div", { class: "arknb-approval-actions" },
          busy ? h("span", { class: "arknb-muted", testid: "arknb-approval-deciding" }, "deciding…")
            : [button("arknb-rerun", "Rerun", "arknb-btn-primary", Action.RERUN), text,
              button("arknb-mark-done", "Mark done", "", Action.MARK_DONE),
              button("arknb-mark-failed", "Mark failed", "arknb-btn-danger", Action.MARK_FAILED)]),
      err ? h("div", { class: "arknb-error", testid: "arknb-approval-error", role: "alert" }, err) : null);
  }

  function decide(approvalId, type, reason) {
    cardErrors.delete(approvalId);
    const payload = { approval_id: approvalId };
    if (type === Action.DENY && reason) payload.reason = reason;
    if ((type === Action.MARK_DONE || type === Action.MARK_FAILED) && reason) payload.text = reason;
    deciding.set(approvalId, store.request({ type, ...payload }));
    renderApprovals();
  }

  const onResult = (msg) => {
    for (const [action, id] of pendingActions) if (id === msg.request_id) pendingActions.delete(action);
    if (msg.approval_id !== undefined) {
      if (deciding.get(msg.approval_id) === msg.request_id) deciding.delete(msg.approval_id);
      if (!msg.ok) cardErrors.set(msg.approval_id, msg.error || "failed");
      renderApprovals();
    }
    refreshControls();
  };
  store.results.add(onResult);

  const view = { update };
  store.views.add(view);
  const onStatus = () => refreshControls();
  model.on("change:status", onStatus);
  model.on("change:error", onStatus);
  model.on("change:read_only", onStatus);
  model.on("change:approvals", renderApprovals);

  if (store.snapshotPending) store.flushNow(); // also updates this view
  else update(true, new Set());
  renderApprovals();
  root.dataset.ready = "true";

  return () => {
    store.views.delete(view);
    store.results.delete(onResult);
    model.off("change:status", onStatus);
    model.off("change:error", onStatus);
    model.off("change:read_only", onStatus);
    model.off("change:approvals", renderApprovals);
    for (const n of nodes.values()) if (n.retry) clearTimeout(n.retry);
  };
}

export default { initialize, render };
