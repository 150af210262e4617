"""A loopback address that accepts TCP connections and never answers them: what a PostgreSQL server
behind a hung proxy, or a firewall that completes the handshake, looks like to a client.

`accepted` is set at each accept, so a test acts once the client is connecting, never after a fixed
sleep. `HangingProxy` is the server that hangs later: it lets connections through to a real server, then,
when told, stops answering the statements that follow their handshake.
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



class HangingProxy:
    """A loopback proxy to a PostgreSQL server that, while `hanging` is set, forwards nothing after each
    connection's handshake (up to the server's first ReadyForQuery): a server that accepts connections and
    then answers nothing, as a stopped or hung one does, while the socket stays open. A connection made
    once `hanging` is cleared works again; one that met the hang stays held (its client gave it up).
    `hang_at` n sets `hanging` as the n-th connection comes (one a command makes after others);
    `held` is set once a statement goes unanswered, so a test acts while a client waits for its answer."""

    def __init__(self, server_port: int):
        self._server_port = server_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.hanging = threading.Event()
        self.hang_at: int | None = None
        self.held = threading.Event()
        self._connections = 0
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, server_url: str) -> str:
        """`server_url` (the server's loopback URL) through the proxy, without TLS or GSS negotiation, whose
        answers are not framed as the protocol's messages the proxy reads."""
        return (server_url.replace(f":{self._server_port}/", f":{self.port}/")
                + "?sslmode=disable&gssencmode=disable")

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(("127.0.0.1", self._server_port))
            self._sockets += [client, server]
            self._connections += 1
            if self._connections == self.hang_at:
                self.hanging.set()
            ready = threading.Event()
            threading.Thread(target=self._forward, args=(client, server, ready, None), daemon=True).start()
            threading.Thread(target=self._forward, args=(server, client, ready, bytearray()), daemon=True).start()

    def _forward(self, source: socket.socket, target: socket.socket, ready: threading.Event,
                 frames: bytearray | None) -> None:
        """Forward `source` to `target` until the hang (after `ready`); `frames`: the server's side, read as
        the protocol's messages (a type byte, a length) until its ReadyForQuery ('Z') sets `ready`."""
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if self.hanging.is_set() and ready.is_set():
                    self.held.set()
                    return  # held: neither read nor answered again
                if frames is not None and not ready.is_set():
                    frames += data
                    while len(frames) >= 5 and len(frames) >= 1 + int.from_bytes(frames[1:5], "big"):
                        if frames[0] == ord("Z"):
                            ready.set()
                        del frames[:1 + int.from_bytes(frames[1:5], "big")]
                target.sendall(data)

    def close(self) -> None:
        """No more connections; those held are closed (their clients see the server go)."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for conn in self._sockets:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
