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
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder

from textual._loop import loop_last
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

IDLE_WAIT = 0.1  # s: Textual's own, when no escape byte waits (the thread checks for exit this often)


class StudioDriver(LinuxDriver):
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

