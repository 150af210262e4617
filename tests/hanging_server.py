"""A loopback address that accepts TCP connections and never answers them: what a PostgreSQL server
behind a hung proxy, or a firewall that completes the handshake, looks like to a client.

`accepted` is set at each accept, so a test acts once the client is connecting, never after a fixed
sleep.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class HangingServer:
    def __init__(self):
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self) -> str:
        """A store's URL here, with a password to look for and a connect timeout no test waits out."""
        return f"postgresql://someone:pw-never-shown@127.0.0.1:{self.port}/db?connect_timeout=600"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            self.held.append(conn)  # kept open, never read, never answered
            self.accepted.set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._listener.close()
        for conn in self.held:
            conn.close()

