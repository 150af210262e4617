"""Guarding tool calls: policies decide ALLOW / DENY / PENDING, approvals settle the PENDING ones."""

from runtime.guard.answers import Answers
from runtime.guard.approval import (
    ApprovalError,
    ApprovalManager,
    ApprovalRequest,
    ApprovalStatus,
    UnknownApprovalError,
)
from runtime.guard.decision import Decision, GuardRequest, GuardResult
from runtime.guard.enforcer import GuardEnforcer, policies_from_constraints
from runtime.guard.policies import (
    AllowList,
    Budget,
    DenyEffects,
    DenyList,
    Policy,
    RateLimit,
    RequireConfirmation,
)

__all__ = [
    "AllowList",
    "Answers",
    "ApprovalError",
    "ApprovalManager",
    "ApprovalRequest",
    "ApprovalStatus",
    "Budget",
    "Decision",
    "DenyEffects",
    "DenyList",
    "GuardEnforcer",
    "GuardRequest",
    "GuardResult",
    "Policy",
    "RateLimit",
    "RequireConfirmation",
    "UnknownApprovalError",
    "policies_from_constraints",
]
