"""Agent state: the saved session, pending approvals, storage backends, migrations, secret lint.

Everything here is pure data or storage: it imports only :mod:`arknb.domain`.
"""

# state
from .agent_state import SCHEMA_VERSION, AgentState
from .migrations import MIGRATIONS, migrate

# approvals
from .approvals import (
    RESOLVED_APPROVALS_KEPT, ApprovalDecision, ApprovalDecisionResult, DeniedCall, PendingApprovalBatch,
    PendingApprovalItem, ResolvedApproval,
)

# storage
from .file_storage import FileStateStorage
from .storage import MemoryStateStorage, StateStorage, state_conflict, storage_location, validate_session_id

# security
from .secrets import REDACTED, Redaction, SecretLint, redact_value

__all__ = [
    "MIGRATIONS", "REDACTED", "RESOLVED_APPROVALS_KEPT", "SCHEMA_VERSION", "AgentState", "ApprovalDecision",
    "ApprovalDecisionResult", "DeniedCall", "FileStateStorage", "MemoryStateStorage", "PendingApprovalBatch",
    "PendingApprovalItem", "Redaction", "ResolvedApproval", "SecretLint", "StateStorage", "migrate",
    "redact_value", "state_conflict", "storage_location", "validate_session_id",
]
