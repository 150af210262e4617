"""Run memory: checkpoints and the recovery facade."""
