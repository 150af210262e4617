"""Checkpoints of a run, the stores that keep them, and the recovery facade."""

from .recovery import EFFECTS_KEY, CheckpointRecoveryFacade

__all__ = ["EFFECTS_KEY", "CheckpointRecoveryFacade"]
