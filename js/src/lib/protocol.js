// Message type names shared with arknb/widgets/_protocol.py (keep both in step).
export const Msg = Object.freeze({ DELTA: "delta", EVENTS: "events", ACTION_RESULT: "action_result" });
export const Action = Object.freeze({
  SEND: "send", APPROVE: "approve", DENY: "deny", STOP: "stop",
  SUSPEND: "suspend", RESUME: "resume", HELLO: "hello", OLDER: "older",
  RERUN: "rerun", MARK_DONE: "mark_done", MARK_FAILED: "mark_failed", ELICIT: "elicit",
});
