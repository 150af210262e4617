"""A studio session: what the TUI, the headless CLI and the tests drive, one interface
(`api.SessionAPI`) with two adapters over the one debugger (`runtime.debug.Debugger`):

- `local.DebugSession` drives it in this process, on a tree file and a store of its own;
- `attached.RemoteSession` drives it in another process over the debug protocol (import it
  from `studio.session.attached`: it brings the protocol's client, which a local studio never loads).

The names the views read are here too (`RunState`, `Stop`, `TimelineRow`, node and port views).
"""

from runtime.debug.stops import RunState, Stop

from ..edits import EditError
from ..event_log import StampedEvent
from ..frames import NodeDetail, NodeView, PortView
from .api import EVENT_BUFFER, SessionAPI, TimelineRow
from .local import RECORDING, DebugSession, StopReason, default_db_path, open_store

__all__ = ["EVENT_BUFFER", "RECORDING", "DebugSession", "EditError", "NodeDetail", "NodeView", "PortView", "RunState",
           "SessionAPI", "StampedEvent", "Stop", "StopReason", "TimelineRow", "default_db_path", "open_store"]
