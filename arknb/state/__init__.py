"""Agent state: the saved session, pending approvals, storage backends, migrations, secret lint.

Everything here is pure data or storage: it imports only :mod:`arknb.domain`.
"""

# state
from .agent_state import SCHEMA_VERSION, AgentState
from .migrations import MIGRATIONS, migrate

# approvals
from .approvals import (
    ApprovalDecision, ApprovalDecisionResult, DeniedCall, PendingApprovalBatch, PendingApprovalItem,
)

# storage
from .file_storage import FileStateStorage
from .storage import MemoryStateStorage, StateStorage, validate_session_id

# security
from .secrets import REDACTED, Redaction, SecretLint, redact_value

__all__ = [
    "MIGRATIONS", "SCHEMA_VERSION", "AgentState", "ApprovalDecision", "ApprovalDecisionResult",
    "DeniedCall", "FileStateStorage", "MemoryStateStorage", "PendingApprovalBatch",
    "PendingApprovalItem", "REDACTED", "Redaction", "SecretLint", "StateStorage", "migrate", "redact_value",
    "validate_session_id",
]
