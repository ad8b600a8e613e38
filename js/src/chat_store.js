// The chat transcript as this page knows it: one store per model, shared by its views.
//
// The kernel sends the whole transcript once (the `_snapshot` trait, answered to our
// `hello`) and then numbered `delta` messages with what changed (arknb/widgets/
// _chat_ops.py): ["add", entry], ["patch", id, fields], [field, id, start, end, text].
// A delta numbered past the next one means we missed something: ask for a snapshot.
import { Action, Msg } from "./lib/protocol.js";
import { applyOp } from "./lib/stream.js";
import { frameScheduler } from "./lib/dom.js";

// anywidget hands every initialize/render its own proxy of the model, so a store keyed by
// that object would not be shared: key it by the id the kernel gives each chat (`static_id`).
const stores = new Map();
const byProxy = new WeakMap(); // hosts (and tests) whose model has no `static_id`
const LOCAL_SAVE_MS = 1500;
const HELLO_RETRY_MS = 5000;
const ANSWER_MS = 4000; // an idle kernel that has not answered a hello by then does not hold the widget

const GONE = new Set(["restarting", "autorestarting", "dead"]);

/**
 * Call `onGone` once the kernel that holds this model's widget restarts, dies or is
 * replaced: the widget lives in that kernel's memory, so the views can no longer act.
 * Uses JupyterLab's (and Notebook 7's) widget manager when it is there; other hosts
 * still mark a disconnected model's views (see kernelGone in chat.js).
 */
function watchKernel(model, onGone) {
  const manager = model.widget_manager;
  const session = manager && manager.context && manager.context.sessionContext;
  const current = () => (session ? session.session && session.session.kernel : manager && manager.kernel);
  let kernel;
  try { kernel = current(); } catch { return null; }
  if (!kernel || !kernel.statusChanged || typeof kernel.statusChanged.connect !== "function") return null;
  const id = kernel.id;
  const check = () => {
    const now = current();
    if (!now || now.id !== id || GONE.has(now.status) || GONE.has(kernel.status)) onGone();
  };
  kernel.statusChanged.connect(check);
  if (session && session.kernelChanged) session.kernelChanged.connect(check);
  check();
  return kernel;
}

export function storeFor(model) {
  const uid = model.get("static_id");
  let store = uid ? stores.get(uid) : byProxy.get(model);
  if (store) return store;
  store = {
    entries: [], byId: new Map(), lengths: new Map(), seq: -1, queue: [], snapshotPending: "initial",
    helloSent: false, helloAt: 0, views: new Set(), results: new Set(), nextRequest: 1, draft: "", localSet: false,
  };

  const hello = () => {
    // One question at a time; ask again only if no answer came within HELLO_RETRY_MS.
    if (store.helloSent && Date.now() - store.helloAt < HELLO_RETRY_MS) return;
    store.helloSent = true;
    store.helloAt = Date.now();
    model.send({ type: Action.HELLO });
    if (store.noAnswer) setTimeout(store.noAnswer, ANSWER_MS);
  };

  const takeSnapshot = () => {
    const snap = model.get("_snapshot") || {};
    const seq = Number.isInteger(snap.seq) ? snap.seq : 0;
    if (seq === store.seq && store.entries.length) return false; // already exactly there
    store.entries = (snap.entries || []).map((e) => ({ ...e }));
    store.byId = new Map(store.entries.map((e) => [e.id, e]));
    store.lengths = new Map();
    store.seq = seq;
    return true;
  };

  const applyDelta = (msg, changed, added) => {
    for (const op of msg.ops || []) {
      const kind = op[0];
      if (kind === "add") {
        const entry = op[1];
        const known = store.byId.get(entry.id);
        if (known) { for (const k of Object.keys(known)) delete known[k]; Object.assign(known, entry); }
        else { const e = { ...entry }; store.entries.push(e); store.byId.set(e.id, e); added.push(e.id); }
        store.lengths.delete(entry.id);
        changed.add(entry.id);
      } else if (kind === "patch") {
        const e = store.byId.get(op[1]);
        if (!e) return false;
        Object.assign(e, op[2]);
        store.lengths.delete(op[1]); // a patched text field is the new baseline for the stream
        changed.add(op[1]);
      } else {
        const outcome = applyOp(store.byId, store.lengths, op);
        if (outcome === "applied") changed.add(op[1]);
        else if (outcome === "gap") return false;
      }
    }
    return true;
  };

  const flush = () => {
    const changed = new Set();
    const added = [];
    let reset = false;
    if (store.snapshotPending) {
      reset = takeSnapshot();
      store.snapshotPending = false;
    }
    const queue = store.queue;
    store.queue = [];
    for (const msg of queue) {
      const numbered = Number.isInteger(msg.seq);
      if (numbered && msg.seq <= store.seq) continue; // already in the snapshot (or a repeat)
      if ((numbered && msg.seq !== store.seq + 1) || !applyDelta(msg, changed, added)) {
        hello();                                       // missed a message: a fresh snapshot follows
        break;
      }
      if (numbered) store.seq = msg.seq;
    }
    for (const view of [...store.views]) view.update(reset, changed, added);
    if (changed.size || reset) scheduleLocalSave();
  };

  // Keep the model's own copy of the snapshot current in this page (never sent back: the
  // kernel ignores it), so "Save widget state" stores the conversation as it stands.
  let saveTimer = null;
  const scheduleLocalSave = () => {
    if (saveTimer) clearTimeout(saveTimer);
    saveTimer = setTimeout(() => {
      saveTimer = null;
      // A kernel snapshot waits in the model for the next frame (a hidden tab has none):
      // writing ours now would replace it with an older state. The flush that takes it saves.
      if (store.snapshotPending) return;
      store.localSet = true;
      try {
        model.set("_snapshot", { seq: store.seq, status: model.get("status"), entries: store.entries.map((e) => ({ ...e })) });
      } finally { store.localSet = false; }
    }, LOCAL_SAVE_MS);
  };

  store.kernelGone = false;
  const gone = () => {
    if (store.kernelGone) return;
    store.kernelGone = true;
    for (const view of [...store.views]) view.update(false, new Set());
  };
  const kernel = watchKernel(model, gone);
  // An idle kernel answers a hello at once. One that stays silent while idle does not hold
  // this widget: a model restored from saved widget state, or its kernel was replaced.
  store.noAnswer = () => {
    if (!kernel || !store.helloSent) return;
    if (kernel.status === "idle") gone();
    else { const again = () => { kernel.statusChanged.disconnect(again); setTimeout(store.noAnswer, ANSWER_MS); };
      kernel.statusChanged.connect(again); }
  };

  store.schedule = frameScheduler(flush);
  store.flushNow = flush;
  store.hello = hello;
  model.on("change:_snapshot", () => {
    if (store.localSet) return;
    store.helloSent = false; // the kernel answered (now, not at the next frame: a hidden tab has none)
    store.snapshotPending = "changed";
    store.schedule();
  });
  model.on("msg:custom", (msg) => {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === Msg.DELTA && Array.isArray(msg.ops)) {
      store.queue.push(msg);
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
  if (uid) {
    stores.set(uid, store);
    model.on("comm:close", () => stores.delete(uid));
  } else byProxy.set(model, store);
  return store;
}
