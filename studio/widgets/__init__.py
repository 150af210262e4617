"""The studio's panes: each draws one part of what the `DebugSession` holds."""
