"""Event type names: one constant per type. Subscribe with these, never with bare strings."""

from __future__ import annotations

__all__ = ["EventTypes"]


class EventTypes:
    """The event types the runtime publishes (DESIGN §4).

    The same strings travel to the widgets; the front end never invents its own.
    Each type's payload keys are listed beside it.

    Example:
        >>> EventTypes.LLM_CHUNK
        'llm.chunk'
    """

    ANY = "*"
    AGENT_STARTED = "agent.started"        # input: [message], resumed: bool
    AGENT_RESUMED = "agent.resumed"        # reason, previous_run_id
    AGENT_SUCCESS = "agent.success"        # stop_reason, final_text, usage, turns
    AGENT_ERROR = "agent.error"            # stop_reason, error
    AGENT_CANCELLED = "agent.cancelled"    # reason
    AGENT_SUSPENDED = "agent.suspended"    # reason ("awaiting_approval" | "suspend" | "loop_decision"), batch_id
    AGENT_ABORTED = "agent.aborted"        # error, slot, hook
    LLM_BEFORE = "llm.before"              # turn, model, message_count, tools
    LLM_CHUNK = "llm.chunk"                # kind ("text" | "reasoning" | "tool_call"), text, index
    #                                        (tool_call: + call_id, name; index = the call's index)
    LLM_RETRY = "llm.retry"                # turn, attempt, delay, error (the provider retries)
    LLM_TRUNCATED = "llm.truncated"        # turn, finish_reason, max_tokens, output_tokens (an answer cut at max_tokens)
    OUTPUT_VALIDATED = "output.validated"  # turn, mode, name, retries, output (a typed answer, DESIGN §17)
    OUTPUT_RETRY = "output.retry"          # turn, attempt, mode, name, retrying, fields, errors
    LLM_AFTER = "llm.after"                # turn, message, finish_reason, usage, raw_text, raw_reasoning
    TOOL_BEFORE = "tool.before"            # call, batch_id
    TOOL_AFTER = "tool.after"              # call, result, batch_id, duration_ms
    TOOL_DENIED = "tool.denied"            # call, result, reason, hook
    TOOL_PROGRESS = "tool.progress"        # call_id, name, progress, total, message (a running tool's report)
    TOOL_SAMPLING = "tool.sampling"        # call_id, name, server, messages, text (a tool's server used the model)
    APPROVAL_REQUIRED = "approval.required"  # batch_id, items
    APPROVAL_DECIDED = "approval.decided"    # batch_id, approval_id, decision, deny_reason, all_decided
    APPROVAL_RESOLVED = "approval.resolved"  # batch_id, items
    LOOP_DETECTED = "loop.detected"        # signature, tool, count, window, threshold, message
    HOOK_DECISION = "hook.decision"        # slot, hook, action, reason, before, after
    HOOK_DIAGNOSTIC = "hook.diagnostic"    # slot, hook, kind ("exception" | "timeout" | "invalid_result"), message
    STATE_PERSISTED = "state.persisted"    # reason, mandatory, skipped, ok, error
    TURN_COMPLETED = "turn.completed"      # turn, message, action
    STATE_LOADED = "state.loaded"          # revision, messages, pending_approval (a saved session was loaded)
    RUNTIME_DETACHED = "runtime.detached"  # reason ("replaced" | "closed" | "lease_lost"); the runtime no longer owns its session
    SECRET_REDACTED = "secret.redacted"    # where, count, kinds (descriptions; never the value)
    PLAN_UPDATED = "plan.updated"          # plan (version, items)
    PLAN_REVIEW_REQUIRED = "plan.review_required"  # batch_id, approval_id, plan
    PLAN_REVIEW_RESOLVED = "plan.review_resolved"  # batch_id, approval_id, decision, reason
    SKILL_ACTIVATED = "skill.activated"    # name, tools
    SKILL_SKIPPED = "skill.skipped"        # name, clashes (its tools named like the runtime's), reason
    CONTEXT_COMPRESSED = "context.compressed"  # before_tokens, after_tokens, replaced (start, end)
    MEMORY_RECORDED = "memory.recorded"    # episode_id, summary, run_id (a completed run was remembered)
    OPERATION_IN_DOUBT = "operation.in_doubt"  # operation_id, call, started_at, attempts
    BUS_DROPPED = "bus.dropped"            # listener, dropped (a slow or failing listener's events)
    GRAPH_STEP_STARTED = "graph.step_started"    # graph, node, step, kind, step_id, state_version
    GRAPH_STEP_FINISHED = "graph.step_finished"  # graph, node, step, step_id, status, update, error
    GRAPH_WAITING = "graph.waiting"              # graph, node, step, item_id, kind ("human" | "in_doubt" | "approval"), question

    ALL: tuple[str, ...] = (
        AGENT_STARTED, AGENT_RESUMED, AGENT_SUCCESS, AGENT_ERROR, AGENT_CANCELLED,
        AGENT_SUSPENDED, AGENT_ABORTED, LLM_BEFORE, LLM_CHUNK, LLM_RETRY, LLM_AFTER, TOOL_BEFORE,
        TOOL_AFTER, TOOL_DENIED, APPROVAL_REQUIRED, APPROVAL_DECIDED, APPROVAL_RESOLVED,
        LOOP_DETECTED, HOOK_DECISION, HOOK_DIAGNOSTIC, STATE_PERSISTED, TURN_COMPLETED,
        STATE_LOADED, RUNTIME_DETACHED, SECRET_REDACTED, PLAN_UPDATED, PLAN_REVIEW_REQUIRED,
        PLAN_REVIEW_RESOLVED, SKILL_ACTIVATED, SKILL_SKIPPED, CONTEXT_COMPRESSED, MEMORY_RECORDED, OPERATION_IN_DOUBT,
        BUS_DROPPED,
        GRAPH_STEP_STARTED, GRAPH_STEP_FINISHED, GRAPH_WAITING,
        LLM_TRUNCATED, OUTPUT_VALIDATED, OUTPUT_RETRY,
        TOOL_PROGRESS, TOOL_SAMPLING,
    )
