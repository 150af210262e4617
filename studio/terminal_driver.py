"""Textual's Linux driver, with a lone escape key read after $ESCDELAY instead of ~100 ms.

Textual's input thread waits `select(0.1)` for the next bytes and only then asks its parser
whether a lone escape byte has waited long enough to be the esc key (not the start of an
escape sequence). With nothing more to read the wait is always the full 100 ms, whatever
$ESCDELAY says: esc (back to the live run) took 100 ms in a terminal before anything was drawn.
This thread waits only until the parser's deadline when one is pending.

And it ends when the terminal is gone (a closed tmux or ssh session: reads give nothing or EIO).
Textual's thread then spins on a terminal that is always readable, and its stop, which writes to
that terminal before telling the thread to end, fails quietly: the studio never exited and took a
core. Otherwise Textual 8.2's `LinuxDriver.run_input_thread`.

And the studio's exit never waits on a terminal that is gone. When a terminal hangs up the kernel
sends SIGCONT with SIGHUP, and Textual's driver answers any SIGCONT by starting application mode
again, a second output thread included; that thread died at its first write to the dead terminal,
and the exit, queueing its last writes behind the thirty its queue holds, waited for it forever (a
closed tmux session under load left the studio asleep, its heartbeats saying the run was alive).
Here SIGCONT resumes only what a SIGTSTP suspended, and writes to a terminal that is gone are
dropped, so the output thread drains its queue to the end.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder
from typing import Any, TextIO

from textual._loop import loop_last
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

IDLE_WAIT = 0.1  # s: Textual's own, when no escape byte waits (the thread checks for exit this often)


class _TerminalOutput:
    """The terminal as the output thread writes to it: once it is gone, writes go nowhere."""

    def __init__(self, file: TextIO) -> None:
        self._file = file
        self.gone = False

    def write(self, text: str) -> None:
        if not self.gone:
            try:
                self._file.write(text)
            except OSError:  # EIO: hung up
                self.gone = True

    def flush(self) -> None:
        if not self.gone:
            try:
                self._file.flush()
            except OSError:
                self.gone = True

    def fileno(self) -> int:
        return self._file.fileno()


class StudioDriver(LinuxDriver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._file = _TerminalOutput(self._file)
        self._suspended = False  # by a SIGTSTP (ctrl+z), until the SIGCONT that resumes it

    def _sigtstp_application(self, *args: Any) -> None:
        self._suspended = self._auto_restart
        super()._sigtstp_application(*args)

    def _sigcont_application(self, *args: Any) -> None:
        if self._suspended:  # not the SIGCONT a hangup sends, nor a stray `kill -CONT`
            self._suspended = False
            super()._sigcont_application(*args)

    def run_input_thread(self) -> None:
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        def wait() -> float:
            deadline = parser._timeout_time  # when a pending escape byte becomes the esc key
            return IDLE_WAIT if deadline is None else min(IDLE_WAIT, max(0.0, deadline - get_time()))

        def process(selector_events: list, final: bool = False) -> bool:
            """Feed what was read to the parser; False once the terminal is gone."""
            for last, (_key, mask) in loop_last(selector_events):
                if mask & selectors.EVENT_READ:
                    try:
                        read = os.read(self.fileno, 4096)
                    except OSError:  # EIO: the terminal hung up
                        return False
                    if not read:
                        return False
                    for event in parser.feed(decode(read, final=final and last)):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)
            return True

        try:
            while not self.exit_event.is_set():
                if not process(selector.select(wait())):
                    return
            selector.unregister(self.fileno)
            process(selector.select(IDLE_WAIT), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass

