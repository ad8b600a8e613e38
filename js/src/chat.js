// ChatWidget front end (arknb/widgets/chat.py). State: the `_snapshot`, `approvals`,
// `status`, `read_only`, `error`, `detached`, `input_block`, `suspending` and `plan` traits, plus
// numbered `delta` messages folded in once per animation frame (chat_store.js).
// Actions go back as typed messages (see _protocol.py).
import { mountHumanCards } from "./chat_human.js";
import { Action } from "./lib/protocol.js";
import { h, prettyJson, setChildren } from "./lib/dom.js";
import { renderMarkdown } from "./lib/markdown.js";
import { diffView } from "./lib/diff.js";
import { subagentView } from "./lib/subagent_view.js";
import { liveChatLink } from "./lib/live_chat_link.js";
import { hideStaticTwin } from "./lib/static_twin.js";
import { storeFor } from "./chat_store.js";
import { planReviewCard, todoPanel } from "./chat_plan.js";
import { fillOutput } from "./chat_output.js";
import { attachmentTray, mediaParts } from "./chat_media.js";
import { elicitationCard, sourceLine } from "./chat_elicitation.js";

const STREAM_RENDER_MS = 60; // re-render a streaming answer's markdown at most this often
const COLLAPSE_CHARS = 1200; // tool results longer than this (or COLLAPSE_LINES) start collapsed
const COLLAPSE_LINES = 16;
const KERNEL_GONE = "detached: the kernel behind this chat is gone (restarted or shut down, or this is a saved copy). "
  + "Nothing here can act; run the notebook again for a live chat.";

function initialize({ model }) {
  // The snapshot trait may predate what streamed since: ask for a fresh one.
  storeFor(model).hello();
}

const STATUS_LABEL = {
  idle: "idle", loading: "loading…", running: "running", awaiting_approval: "awaiting approval", suspended: "suspended",
  completed: "completed", cancelled: "stopped", failed: "failed", aborted: "aborted",
};

// Where a finished call's answer came from, when it did not run now (DESIGN §13).
const ORIGIN_LABEL = { reused: "reused", settled: "settled by you" };
const ORIGIN_TITLE = {
  reused: "It ran before the restore: its saved result is used, and it did not run again.",
  settled: "A person said what became of this call; it did not run again.",
};

function durationText(ms) {
  return ms < 1 ? "<1 ms" : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function timeText(at) {
  if (typeof at !== "number") return "";
  const d = new Date(at * 1000);
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/** A small "Copy" button: the text goes to the clipboard (or a hidden textarea's selection).
 *  Its label (and a message's time) are drawn by CSS from attributes, so a message's
 *  innerText stays the message itself. */
function copyButton(getText, label) {
  const b = h("button", { class: "arknb-btn arknb-link arknb-copy", testid: "arknb-copy", type: "button",
    title: `Copy ${label}`, "aria-label": `Copy ${label}`, "data-copied": "" });
  b.addEventListener("click", async () => {
    const text = getText();
    let ok = false;
    try { await navigator.clipboard.writeText(text); ok = true; } catch (_) {
      const area = h("textarea", { class: "arknb-copy-area" });
      area.value = text;
      document.body.append(area);
      area.select();
      try { ok = document.execCommand("copy"); } catch (_e) { ok = false; }
      area.remove();
    }
    b.dataset.copied = String(ok);
    setTimeout(() => { b.dataset.copied = ""; }, 1500);
  });
  return b;
}

function toolStatusLabel(status) {
  return ({ requested: "requested", queued: "waits for your decision", running: "running…", awaiting_approval: "awaiting approval",
    approved: "approved", done: "done", error: "error", denied: "denied", not_executed: "not executed",
    interrupted: "interrupted", in_doubt: "in doubt" })[status] || status;
}

// The runtime's own hooks speak for themselves: a person never sees their internal names.
const BUILT_IN_HOOKS = new Set(["approval_policy", "plan_mode", "approval"]);

function hookSentence(e) {
  const tool = (e.after && e.after.name) || (e.before && e.before.name);
  const name = typeof tool === "string" ? tool : "the call";
  if (BUILT_IN_HOOKS.has(e.hook) && e.slot === "before_tool_call") {
    if (e.action === "defer" && e.hook === "approval_policy") return `needs your approval: ${name} is dangerous`;
    if (e.action === "defer" && name === "write_todos") return "the new plan waits for your review";
    if (e.action === "defer") return `needs your approval: ${name}${e.reason ? ` (${e.reason})` : ""}`;
    if (e.action === "deny") return `${name} was not run${e.reason ? `: ${e.reason}` : ""}`;
  }
  return hookSentenceOf(e, tool);
}

/** True when hookSentence already says the reason (it is not repeated after it). */
function sentenceHasReason(e) {
  return BUILT_IN_HOOKS.has(e.hook) && e.slot === "before_tool_call" && ["defer", "deny"].includes(e.action);
}

function hookSentenceOf(e, tool) {
  const what = { before_tool_call: "arguments", after_tool_call: "result", on_model_chunk: "streamed text",
    before_model_call: "model request", after_model_call: "model response", before_run: "input",
    on_turn_completion: "turn", before_persist_state: "save" }[e.slot] || e.slot;
  const verb = { rewrite: "rewrote", proceed: "rewrote", deny: "denied", defer: "deferred", abort: "aborted",
    drop: "dropped", respond: "answered", retry: "retried", stop: "stopped", skip: "skipped",
    hold: "held" }[e.action] || e.action;
  return `${e.hook || "a hook"} ${verb} ${what}${tool && typeof tool === "string" ? ` of ${tool}` : ""}` +
    `${e.count > 1 ? ` (×${e.count})` : ""}`;
}

/** True when the model is cut off from its kernel: seen by the store (restart, shutdown),
 *  or marked by ipywidgets on the view's element (e.g. a model restored from saved state). */
function kernelGone(el, store) {
  return store.kernelGone || el.classList.contains("jupyter-widgets-disconnected")
    || !!el.closest(".jupyter-widgets-disconnected");
}

function render({ model, el }) {
  return createView(model, el, storeFor(model));
}

function createView(model, el, store) {
  const nodes = new Map();          // entry id -> {root, parts...}
  const pendingActions = new Map(); // action -> request id (stop/suspend/resume/send)
  const deciding = new Map();       // approval id -> request id while the click is in flight
  const cardErrors = new Map();     // approval id -> error from the last action_result
  const subOpen = new Map();        // delegate_task call id -> its sub-agent card open or closed
  const decided = new Map();        // approval id -> decision the last action_result reported
  let sentText = null;              // the text of the send in flight (cleared when accepted)

  const status = h("span", { class: "arknb-status", testid: "arknb-status", role: "status" });
  const stopBtn = h("button", { class: "arknb-btn arknb-btn-danger", testid: "arknb-stop", type: "button",
    title: "Cancel the run (final)" }, "Stop");
  const suspendBtn = h("button", { class: "arknb-btn", testid: "arknb-suspend", type: "button",
    title: "Pause at the next safe checkpoint" }, "Suspend");
  const resumeBtn = h("button", { class: "arknb-btn", testid: "arknb-resume", type: "button",
    title: "Continue a suspended run" }, "Resume");
  const detachedBar = h("div", { class: "arknb-detached", testid: "arknb-detached", role: "status" });
  const suspendingBar = h("div", { class: "arknb-suspending", testid: "arknb-suspending", role: "status" },
    "suspending at the next checkpoint…");
  const errorBar = h("div", { class: "arknb-error", testid: "arknb-error", role: "alert" });
  const log = h("div", { class: "arknb-log", testid: "arknb-transcript", role: "log", "aria-live": "polite" });
  const approvalsBox = h("div", { class: "arknb-approvals", testid: "arknb-approvals" });
  const todos = todoPanel();
  const input = h("textarea", { class: "arknb-input", testid: "arknb-input", rows: "2",
    placeholder: "Message the agent — Enter sends, Shift+Enter adds a line", "aria-label": "Message" });
  const sendBtn = h("button", { class: "arknb-btn arknb-btn-primary", testid: "arknb-send", type: "button" }, "Send");
  const blockId = `arknb-block-${Math.random().toString(36).slice(2)}`;
  const blockNote = h("div", { class: "arknb-muted arknb-block-note", testid: "arknb-input-block", id: blockId,
    role: "status" });
  const tray = attachmentTray(() => model.get("max_attachment_bytes"), () => refreshControls());
  const composer = h("div", { class: "arknb-composer-wrap" }, tray.root,
    h("div", { class: "arknb-composer" }, input, tray.button, sendBtn), blockNote);
  // data-lm-suppress-shortcuts: keys pressed inside the chat are the chat's (Enter on an
  // Approve button must not also put the notebook cell into edit mode).
  const root = h("div", { class: "arknb arknb-chat", testid: "arknb-chat", "data-lm-suppress-shortcuts": "true" },
    h("div", { class: "arknb-toolbar" }, h("span", { class: "arknb-title" }, "Agent"), status,
      h("span", { class: "arknb-spacer" }), suspendBtn, resumeBtn, stopBtn),
    detachedBar, suspendingBar, errorBar, log, todos.root, approvalsBox, composer);
  input.value = store.draft;
  const liveLink = liveChatLink(root, () => model.get("session_id") || "");

  const isDetached = () => !!model.get("detached") || kernelGone(el, store);
  const inputBlock = () => (kernelGone(el, store) ? KERNEL_GONE : model.get("input_block") || "");

  const act = (type, payload = {}) => {
    if (isDetached()) return null;
    const id = store.request({ type, ...payload });
    pendingActions.set(type, id);
    refreshControls();
    return id;
  };
  const send = () => {
    const text = input.value.trim();
    const attachments = tray.files();
    if ((!text && !attachments.length) || tray.busy() || model.get("read_only") || inputBlock()
      || pendingActions.has(Action.SEND)) return;
    sentText = input.value;
    act(Action.SEND, attachments.length ? { text, attachments } : { text });
  };
  const onKey = (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send(); }
  };
  input.addEventListener("keydown", onKey);
  input.addEventListener("input", () => { store.draft = input.value; });
  sendBtn.addEventListener("click", send);
  stopBtn.addEventListener("click", () => act(Action.STOP));
  suspendBtn.addEventListener("click", () => act(Action.SUSPEND));
  resumeBtn.addEventListener("click", () => act(Action.RESUME));
  tray.bind(composer, input);

  function refreshControls() {
    const st = model.get("status") || "idle";
    const ro = !!model.get("read_only");
    const detached = isDetached();
    const detachedText = model.get("detached") || (kernelGone(el, store) ? KERNEL_GONE : "");
    status.textContent = model.get("detached") ? "not live" : STATUS_LABEL[st] || st;
    status.dataset.status = st;
    root.dataset.status = st;
    root.dataset.readOnly = String(ro);
    root.dataset.detached = String(detached);
    root.dataset.session = model.get("session_id") || "";
    detachedBar.textContent = detachedText;
    detachedBar.append(liveLink.root);
    detachedBar.hidden = !detachedText;
    liveLink.update(!!model.get("detached"));
    const busy = (a) => pendingActions.has(a);
    const suspending = !!model.get("suspending") || busy(Action.SUSPEND);
    stopBtn.disabled = ro || detached || busy(Action.STOP) || !["running", "suspended", "awaiting_approval"].includes(st);
    stopBtn.textContent = busy(Action.STOP) ? "Stopping…" : "Stop";
    suspendBtn.disabled = ro || detached || suspending || st !== "running";
    suspendBtn.textContent = suspending && st === "running" ? "Suspending…" : "Suspend";
    suspendingBar.hidden = !(suspending && st === "running");
    resumeBtn.hidden = st !== "suspended";
    resumeBtn.disabled = ro || detached || busy(Action.RESUME);
    stopBtn.hidden = suspendBtn.hidden = ro;
    composer.hidden = ro;
    const block = ro ? "" : inputBlock();
    // Sending is disabled while something blocks input, with the reason under the box;
    // the box itself stays editable (the next message can be written meanwhile, and
    // Approve/Deny move focus here) and keeps whatever it holds.
    input.dataset.blocked = String(!!block);
    if (block) input.setAttribute("aria-describedby", blockId); else input.removeAttribute("aria-describedby");
    sendBtn.disabled = !!block || busy(Action.SEND) || tray.busy();
    tray.disable(!!block);
    sendBtn.title = block || "Send (Enter)";
    blockNote.textContent = block;
    blockNote.hidden = !block || detached; // the detached banner already says why
    const err = model.get("error") || "";
    errorBar.textContent = err;
    errorBar.hidden = !err;
  }

  // -- transcript entries ---------------------------------------------------------
  function buildEntry(e) {
    let n;
    if (e.kind === "user") {
      const when = h("time", { class: "arknb-msg-time", testid: "arknb-msg-time" });
      n = { root: h("div", { class: "arknb-msg arknb-user", testid: "arknb-user" },
        h("div", { class: "arknb-bubble arknb-plain" }),
        h("div", { class: "arknb-msg-meta" }, when, copyButton(() => store.byId.get(e.id)?.text || "", "message"))),
      when };
    } else if (e.kind === "assistant") {
      const body = h("div", { class: "arknb-md", testid: "arknb-assistant-text" });
      const reasoningBody = h("div", { class: "arknb-md arknb-reasoning-body" });
      const reasoning = h("details", { class: "arknb-reasoning", testid: "arknb-reasoning" },
        h("summary", {}, "Reasoning"), reasoningBody);
      const outputSlot = h("div", { class: "arknb-output-slot", hidden: true });
      const when = h("time", { class: "arknb-msg-time", testid: "arknb-msg-time" });
      const meta = h("div", { class: "arknb-msg-meta" }, when,
        copyButton(() => store.byId.get(e.id)?.text || "", "answer"));
      n = { root: h("div", { class: "arknb-msg arknb-assistant", testid: "arknb-assistant" },
        h("div", { class: "arknb-bubble" }, reasoning, outputSlot, body), meta), body, reasoning, reasoningBody,
      outputSlot, renderedAt: 0, when, meta };
    } else if (e.kind === "tool") {
      n = { root: h("div", { class: "arknb-card arknb-tool", testid: "arknb-tool-card" }), expanded: false };
    } else if (e.kind === "hook") {
      n = { root: h("div", { class: "arknb-hook", testid: "arknb-hook" }) };
    } else {
      n = { root: h("div", { class: "arknb-notice", testid: "arknb-notice" }) };
    }
    n.root.dataset.entryId = e.id;
    return n;
  }

  function toolResult(e, n) {
    if (e.result === null || e.result === undefined) return null;
    const text = String(e.result);
    const body = h("div", { class: "arknb-tool-result-body" });
    renderMarkdown(body, text);
    const long = text.length > COLLAPSE_CHARS || text.split("\n").length > COLLAPSE_LINES;
    const box = h("div", { class: `arknb-tool-result${e.is_error ? " arknb-is-error" : ""}`, testid: "arknb-tool-result" },
      body);
    if (!long) return box;
    const toggle = h("button", { class: "arknb-btn arknb-link", testid: "arknb-show-more", type: "button" });
    const apply = () => {
      box.classList.toggle("arknb-collapsed", !n.expanded);
      toggle.textContent = n.expanded ? "show less" : `show more (${text.length.toLocaleString()} characters)`;
      toggle.setAttribute("aria-expanded", String(n.expanded));
    };
    toggle.addEventListener("click", () => { n.expanded = !n.expanded; apply(); });
    apply();
    return [box, toggle];
  }

  function fillEntry(e, n, force) {
    if (e.kind === "user" || e.kind === "assistant") {
      const t = timeText(e.at);
      if (n.when.dataset.time !== t) n.when.dataset.time = t;
      if (t) n.when.dateTime = new Date(e.at * 1000).toISOString();
    }
    if (e.kind === "user") {
      n.root.firstChild.textContent = e.text || "";
      n.root.firstChild.hidden = !e.text && !!e.parts;
      n.parts?.remove();
      n.parts = mediaParts(e.parts);
      if (n.parts) n.root.append(n.parts);
    } else if (e.kind === "assistant") {
      n.root.dataset.streaming = String(!!e.streaming);
      n.meta.hidden = !!e.streaming || !e.text;
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
      n.body.hidden = fillOutput(n.outputSlot, e);  // a typed answer shows as its table (chat_output.js)
      n.root.hidden = !e.text && !e.reasoning && !e.streaming && !e.output;
    } else if (e.kind === "tool") {
      n.root.dataset.callId = e.call_id;
      n.root.dataset.status = e.status;
      if (e.origin) n.root.dataset.origin = e.origin; else delete n.root.dataset.origin;
      // A chat that is no longer live cannot tell how a waiting call ended: it does not pretend to.
      const waiting = e.status === "awaiting_approval" || e.status === "in_doubt";
      const badge = ORIGIN_LABEL[e.origin] || (waiting && model.get("detached") ? "not decided here"
        : toolStatusLabel(e.status));
      setChildren(n.root,
        h("div", { class: "arknb-card-head" },
          h("span", { class: "arknb-tool-name" }, e.name),
          h("span", { class: `arknb-badge arknb-badge-${e.origin || e.status}`, testid: "arknb-tool-status",
            title: ORIGIN_TITLE[e.origin] || "" }, badge),
          e.duration_ms != null ? h("span", { class: "arknb-muted" }, durationText(e.duration_ms)) : null),
        h("details", { class: "arknb-args" }, h("summary", {}, "arguments"),
          h("pre", { class: "arknb-pre", testid: "arknb-tool-args" }, prettyJson(e.arguments))),
        e.reason ? h("div", { class: "arknb-muted", testid: "arknb-tool-reason" },
          `${e.status === "denied" ? "denied" : "reason"}: ${e.reason}`) : null,
        toolResult(e, n),
        e.subagent ? subagentView(e.subagent, subOpen, e.call_id) : null);
    } else if (e.kind === "hook") {
      n.root.dataset.hook = e.hook;
      n.root.dataset.action = e.action;
      const details = h("details", { class: "arknb-hook-details" },
        h("summary", {}, h("span", { class: "arknb-hook-text" }, hookSentence(e)),
          e.reason && !sentenceHasReason(e) ? h("span", { class: "arknb-muted" }, ` — ${e.reason}`) : null));
      details.addEventListener("toggle", () => {
        if (details.open && !details.querySelector(".arknb-diff")) details.append(diffView(e.before, e.after));
      }, { once: true });
      n.root.replaceChildren(details);
    } else {
      n.root.dataset.level = e.level || "info";
      n.root.textContent = e.text || "";
    }
  }

  function update(reset, changed, added = []) {
    if (store.kernelGone && root.dataset.detached !== "true") renderApprovals();
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
      const fresh = new Set(added);
      for (const id of added) {          // new entries always come last, in order
        const e = store.byId.get(id);
        if (!e || nodes.has(id)) continue;
        const n = buildEntry(e);
        nodes.set(id, n);
        fillEntry(e, n, true);
        log.append(n.root);
      }
      for (const id of changed) {
        if (fresh.has(id)) continue;
        const e = store.byId.get(id), n = nodes.get(id);
        if (e && n) fillEntry(e, n, false);
      }
    }
    const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
    if (nearBottom || reset || added.length) log.scrollTop = log.scrollHeight;
    refreshControls();
  }

  // -- approvals --------------------------------------------------------------------
  function renderApprovals() {
    const ro = !!model.get("read_only");
    const detached = isDetached();
    const items = model.get("approvals") || [];
    const live = new Set(items.map((a) => a.approval_id));
    for (const id of [...deciding.keys()]) if (!live.has(id)) deciding.delete(id);
    // Cards are rebuilt: keep keyboard focus on the same control of the same card.
    const active = document.activeElement;
    const had = active && approvalsBox.contains(active)
      ? { id: active.closest("[data-approval-id]")?.dataset.approvalId, testid: active.dataset.testid } : null;
    approvalsBox.replaceChildren(...items.map((a) => {
      if (a.kind === "in_doubt") return inDoubtCard(a, ro, detached);
      const decision = decided.get(a.approval_id) || (a.decision !== "pending" ? a.decision : null);
      const busy = !decision && (a.deciding || deciding.has(a.approval_id));
      const usable = !ro && !detached && !decision && !busy && a.live !== false;
      const err = cardErrors.get(a.approval_id) || a.error;
      if (a.kind === "elicitation") {
        return elicitationCard(a, { usable, busy, decision, error: err,
          onAnswer: (action, content) => decide(a.approval_id, Action.ELICIT, { action, content }) });
      }
      if (a.kind === "plan") {
        return planReviewCard(a, { usable, busy, decision, error: err, note: a.note, readOnly: ro,
          state: decision ? "decided" : busy ? "deciding" : usable ? "live" : "dead",
          onApprove: () => decide(a.approval_id, Action.APPROVE),
          onReject: (why) => decide(a.approval_id, Action.DENY, why) });
      }
      const reason = h("input", { class: "arknb-reason", testid: "arknb-deny-reason", type: "text",
        placeholder: "reason (optional)", "aria-label": `Reason for denying ${a.tool_name}`, disabled: !usable });
      const approve = h("button", { class: "arknb-btn arknb-btn-primary", testid: "arknb-approve", type: "button",
        disabled: !usable }, "Approve");
      const deny = h("button", { class: "arknb-btn arknb-btn-danger", testid: "arknb-deny", type: "button",
        disabled: !usable }, "Deny");
      approve.addEventListener("click", () => decide(a.approval_id, Action.APPROVE));
      deny.addEventListener("click", () => decide(a.approval_id, Action.DENY, reason.value.trim()));
      reason.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") { ev.preventDefault(); decide(a.approval_id, Action.DENY, reason.value.trim()); }
      });
      let actions;
      if (ro) actions = h("div", { class: "arknb-muted" }, "pending (read-only replay)");
      else if (decision) {
        actions = h("div", { class: `arknb-decision arknb-decision-${decision}`, testid: "arknb-approval-decision" },
          decision === "approved" ? "✓ approved" : decision === "denied" ? "✗ denied" : decision,
          a.note ? h("span", { class: "arknb-muted" }, ` — ${a.note}`) : null);
      } else if (busy) {
        actions = h("span", { class: "arknb-muted", testid: "arknb-approval-deciding" }, "deciding…");
      } else {
        actions = h("div", { class: "arknb-approval-actions" }, approve, reason, deny,
          !usable && a.note ? h("span", { class: "arknb-muted" }, a.note) : null);
      }
      const state = decision ? "decided" : busy ? "deciding" : usable ? "live" : "dead";
      return h("div", { class: "arknb-card arknb-approval", testid: "arknb-approval",
        "data-approval-id": a.approval_id, "data-deciding": String(!!busy), "data-state": state, role: "group",
        "aria-label": `Approval needed for ${a.tool_name}` },
        h("div", { class: "arknb-card-head" },
          h("span", { class: "arknb-tool-name" }, a.tool_name),
          a.risk_level ? h("span", { class: "arknb-badge arknb-badge-awaiting_approval" }, a.risk_level) : null),
        a.reason ? h("div", { class: "arknb-muted" }, a.reason) : null,
        subAgentSource(a), sourceLine(a),
        h("pre", { class: "arknb-pre" }, prettyJson(a.arguments)),
        actions,
        err && !decision ? h("div", { class: "arknb-error", testid: "arknb-approval-error", role: "alert" }, err) : null);
    }));
    // A chat another chat took over shows no cards: the live chat has them.
    approvalsBox.hidden = items.length === 0 || !!model.get("detached");
    if (had) {
      const same = approvalsBox.querySelector(`[data-approval-id='${CSS.escape(had.id || "")}'] [data-testid='${had.testid}']`);
      if (same && !same.disabled) same.focus();
      else moveFocus(had.id);
    }
  }

  /** A call a crash left with an unknown fate (DESIGN §13): the person reruns it, or says
   * what it did (its result text) or that it failed (the reason). */
  function inDoubtCard(a, ro, detached) {
    const decision = decided.get(a.approval_id) || (a.decision !== "pending" ? a.decision : null);
    const busy = !decision && (a.deciding || deciding.has(a.approval_id));
    const usable = !ro && !detached && !decision && !busy && a.live !== false;
    const err = cardErrors.get(a.approval_id) || a.error;
    const text = h("input", { class: "arknb-reason", testid: "arknb-in-doubt-text", type: "text",
      placeholder: "what it returned, or why it failed", "aria-label": `Outcome of ${a.tool_name}`,
      disabled: !usable });
    const button = (testid, label, cls, type) => {
      const b = h("button", { class: `arknb-btn ${cls}`, testid, type: "button", disabled: !usable }, label);
      b.addEventListener("click", () => decide(a.approval_id, type, text.value.trim()));
      return b;
    };
    let actions;
    if (ro) actions = h("div", { class: "arknb-muted" }, "in doubt (read-only replay)");
    else if (decision) {
      actions = h("div", { class: "arknb-decision", testid: "arknb-approval-decision" },
        { rerun: "↻ run again", done: "✓ marked done", failed: "✗ marked failed", approved: "↻ run again",
          denied: "✓ settled by a person" }[decision] || decision);
    } else if (busy) {
      actions = h("span", { class: "arknb-muted", testid: "arknb-approval-deciding" }, "deciding…");
    } else {
      actions = h("div", { class: "arknb-approval-actions" },
        button("arknb-rerun", "Rerun", "arknb-btn-primary", Action.RERUN), text,
        button("arknb-mark-done", "Mark done", "", Action.MARK_DONE),
        button("arknb-mark-failed", "Mark failed", "arknb-btn-danger", Action.MARK_FAILED));
    }
    const state = decision ? "decided" : busy ? "deciding" : usable ? "live" : "dead";
    return h("div", { class: "arknb-card arknb-approval arknb-in-doubt", testid: "arknb-in-doubt",
      "data-approval-id": a.approval_id, "data-deciding": String(!!busy), "data-state": state, role: "group",
      "aria-label": `${a.tool_name} may or may not have run` },
      h("div", { class: "arknb-card-head" },
        h("span", { class: "arknb-tool-name" }, a.tool_name),
        h("span", { class: "arknb-badge arknb-badge-awaiting_approval" }, "in doubt")),
      a.reason ? h("div", { class: "arknb-muted" }, a.reason) : null,
      subAgentSource(a),
      h("pre", { class: "arknb-pre" }, prettyJson(a.arguments)),
      actions,
      err && !decision ? h("div", { class: "arknb-error", testid: "arknb-approval-error", role: "alert" }, err) : null);
  }

  // A sub-agent's item, listed here under its name ("cleaner/approval_…", "uploader/op_…").
  function subAgentSource(a) {
    return a.approval_id.includes("/") ? h("div", { class: "arknb-muted arknb-approval-source",
      testid: "arknb-approval-source" }, `asked by sub-agent ${a.approval_id.split("/").slice(0, -1).join(" › ")}`)
      : null;
  }

  /** After a decision, keyboard focus goes to the next card still waiting, else the send box. */
  function moveFocus(fromId) {
    const cards = [...approvalsBox.querySelectorAll("[data-approval-id]")];
    const at = cards.findIndex((c) => c.dataset.approvalId === fromId);
    const order = [...cards.slice(at + 1), ...cards.slice(0, Math.max(at, 0))];
    const next = order.map((c) => c.querySelector(
      "[data-testid='arknb-approve']:not([disabled]), [data-testid='arknb-plan-approve']:not([disabled])")).find(Boolean);
    (next || input).focus();
  }

  function decide(approvalId, type, reason) {
    if (deciding.has(approvalId) || isDetached()) return; // the first click wins; no second request
    cardErrors.delete(approvalId);
    const payload = { approval_id: approvalId };
    if (type === Action.DENY && reason) payload.reason = reason;
    if ((type === Action.MARK_DONE || type === Action.MARK_FAILED) && reason) payload.text = reason;
    if (type === Action.ELICIT) Object.assign(payload, reason);
    deciding.set(approvalId, store.request({ type, ...payload }));
    renderApprovals();
    moveFocus(approvalId);
  }

  const onResult = (msg) => {
    for (const [action, id] of pendingActions) if (id === msg.request_id) pendingActions.delete(action);
    if (msg.action === Action.SEND && sentText !== null) {
      // Accepted: the message is in the transcript now. Refused: the text stays to edit or resend.
      if (msg.ok && input.value === sentText) { input.value = ""; store.draft = ""; }
      if (msg.ok) tray.clear();
      sentText = null;
    }
    if (msg.approval_id !== undefined) {
      if (deciding.get(msg.approval_id) === msg.request_id) deciding.delete(msg.approval_id);
      if (msg.decision) decided.set(msg.approval_id, msg.decision);
      if (!msg.ok && !msg.decision) cardErrors.set(msg.approval_id, msg.error || "failed");
      renderApprovals();
    }
    refreshControls();
  };

  const onStatus = () => { refreshControls(); renderApprovals(); };
  const renderTodos = () => todos.render(model.get("plan") || {});
  const onConnection = () => { refreshControls(); renderApprovals(); };
  // ipywidgets marks a view whose kernel went away with a class on its element.
  const observer = typeof MutationObserver === "function" ? new MutationObserver(onConnection) : null;
  observer?.observe(el, { attributes: true, attributeFilter: ["class"] });
  const view = { update };
  // While this view lives it hides the chat's static companion output.
  const untwin = hideStaticTwin(model.get("static_id"));

  function destroy() {
    untwin();
    store.views.delete(view);
    store.results.delete(onResult);
    for (const [name, handler] of listeners) model.off(name, handler);
    observer?.disconnect();
    for (const n of nodes.values()) if (n.retry) clearTimeout(n.retry);
    unmountHumans();
  }

  const listeners = [
    ...["status", "error", "read_only", "detached", "input_block", "suspending"].map((t) => [`change:${t}`, onStatus]),
    ["change:approvals", renderApprovals], ["change:plan", renderTodos], ["comm_live_update", onConnection],
    ["change:detached", () => update(true, new Set())]];  // its waiting cards stop claiming to wait
  store.results.add(onResult);
  for (const [name, handler] of listeners) model.on(name, handler);

  el.replaceChildren(root);
  // A graph run's questions for a person (ChatWidget.follow_graph; js/src/chat_human.js).
  const unmountHumans = mountHumanCards(model, root, "humans", composer);
  // Fold in what the model holds (the other views take the change), then draw everything
  // the store has. A flush only reports what changed, and a pending snapshot may already
  // be in the store (a delta brought it a frame earlier): this new view would get nothing.
  if (store.snapshotPending) store.flushNow();
  store.views.add(view);
  update(true, new Set());
  renderApprovals();
  renderTodos();
  root.dataset.ready = "true";
  return destroy;
}

export default { initialize, render };
