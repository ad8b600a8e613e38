"""Agent state: the saved session, pending approvals, storage backends, migrations, secret lint.

Everything here is pure data or storage: it imports only :mod:`arknb.domain`.
"""

# state
from .agent_state import SCHEMA_VERSION, AgentState
from .migrations import MIGRATIONS, migrate
from .run_output import SavedOutputType

# approvals
from .approvals import (
    RESOLVED_APPROVALS_KEPT, ApprovalDecision, ApprovalDecisionResult, DeniedCall, PendingApprovalBatch,
    PendingApprovalItem, ResolvedApproval,
)

# plans and skills (the values the planner and skills extensions keep in their slices)
from .plan import PLAN_KIND, PLAN_SLICE, PendingPlanReview, Plan, PlanItem, TodoStatus, plan_of
from .skills import SKILLS_SLICE, active_skills_of
from .context import CONTEXT_SLICE, ContextSummary, context_summaries_of

# storage
from .file_storage import FileStateStorage
from .storage import MemoryStateStorage, StateStorage, state_conflict, storage_location, validate_session_id

# security
from .secrets import ENV_SUFFIXES, REDACTED, Redaction, SecretLint, environment_secrets, redact_value

__all__ = [
    "CONTEXT_SLICE", "ContextSummary", "ENV_SUFFIXES", "MIGRATIONS", "PLAN_KIND", "PLAN_SLICE", "REDACTED", "RESOLVED_APPROVALS_KEPT",
    "SCHEMA_VERSION", "SKILLS_SLICE", "AgentState", "SavedOutputType", "ApprovalDecision", "ApprovalDecisionResult", "DeniedCall",
    "FileStateStorage", "MemoryStateStorage", "PendingApprovalBatch", "PendingApprovalItem", "PendingPlanReview",
    "Plan", "PlanItem", "Redaction", "ResolvedApproval", "SecretLint", "StateStorage", "TodoStatus",
    "active_skills_of", "context_summaries_of", "environment_secrets", "migrate", "plan_of", "redact_value", "state_conflict",
    "storage_location", "validate_session_id",
]
