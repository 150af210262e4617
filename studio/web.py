"""`jianmu-studio web TREE [--at HOST:PORT]`: the same studio, served to a browser by textual-serve.

Each page that connects starts its own studio process on the tree (`jianmu-studio open TREE`, with
the same store), drawn in the page by textual-serve's terminal; closing the page ends it. The
server listens on loopback unless told otherwise. Bound elsewhere it follows the debug server's
rule: a token is needed (`--token`, else $JIANMU_DEBUG_TOKEN, else one made up and printed with
the address), given once as `?token=…` in the address, which the page keeps as a cookie for its
connection; and a warning says that it travels unencrypted. textual-serve comes with the `[web]`
extra.
"""

from __future__ import annotations

import argparse
import hmac
import os
import secrets
import shlex
import socket
import sys
from typing import Any

from runtime.extras import require

DEFAULT_AT = "127.0.0.1:8000"
COOKIE = "jianmu_token"
TOKEN_VARIABLE = "JIANMU_DEBUG_TOKEN"


def add_command(sub: Any, parents: list[argparse.ArgumentParser], store_help: str) -> None:
    web = sub.add_parser("web", parents=parents, help="serve the studio on a tree to a browser (the [web] extra)")
    web.add_argument("tree", help="path.py, path.py:function or a sample's name")
    web.add_argument("--at", default=DEFAULT_AT, metavar="HOST:PORT",
                     help=f"where to listen (default {DEFAULT_AT}, loopback; elsewhere a token is needed)")
    web.add_argument("--db", metavar="STORE", help=f"record checkpoints into this {store_help} "
                     "(default: $JIANMU_DB, else the studio's default file)")
    web.add_argument("--token", help=f"the token a page needs when not on loopback (default ${TOKEN_VARIABLE}, "
                     "else a new one, printed)")


def studio_command(tree: str, db: str | None) -> str:
    """What each page runs: this studio, this Python, on the tree and the store."""
    return shlex.join([sys.executable, "-m", "studio.cli", "open", tree, *(["--db", db] if db else [])])


def serve(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    """Serve until interrupted; a bad --at (or no [web] extra) is one line."""
    from runtime.debug.protocol import parse_address
    from runtime.debug.server import _is_loopback

    from .loader import load_tree
    from .stopping import user_code

    require("web", "textual_serve.server")
    try:
        host, port = parse_address(args.at)
    except ValueError as exc:
        raise usage_error(f"--at {args.at}: {exc}") from exc
    if port == 0:  # any free one, chosen here: the address printed is the one served
        with socket.create_server((host, 0)) as probe:
            port = probe.getsockname()[1]
    with user_code():
        load_tree(args.tree)  # a tree that does not load is said here, once, not in every page
    token = None if _is_loopback(host) else (args.token or os.environ.get(TOKEN_VARIABLE) or secrets.token_urlsafe(18))
    server = _server_class()(studio_command(args.tree, args.db), host=host, port=port,
                             title=f"Jianmu Studio: {args.tree}", token=token)
    where = f"http://{host}:{port}/" + (f"?token={token}" if token else "")
    if token:
        print(f"jianmu-studio web: on {host}, reachable from other machines; the token travels unencrypted",
              file=sys.stderr)
    print(f"jianmu-studio web: serving the studio on {args.tree} at {where}", file=sys.stderr, flush=True)
    try:
        server.serve()
    except OSError as exc:
        raise usage_error(f"--at {args.at}: cannot listen there ({exc.strerror or exc})") from exc
    return 0


def _server_class() -> type:
    """textual-serve's server, quiet (its banner and request log would bury the address line), with the
    token checked on the page and on its connection when there is one."""
    from aiohttp import web
    from textual_serve.server import Server

    class StudioServer(Server):
        def __init__(self, command: str, *, token: str | None, **kwargs: Any):
            super().__init__(command, **kwargs)
            self.token = token

        def initialize_logging(self) -> None:
            pass

        async def on_startup(self, app: Any) -> None:
            pass

        def _allowed(self, given: str | None) -> bool:
            """Compared as bytes: `compare_digest` refuses a str with non-ASCII characters (TypeError:
            a page asked with `?token=é` got a 500, not a 403)."""
            return self.token is None or (given is not None and hmac.compare_digest(
                given.encode("utf-8", "surrogatepass"), self.token.encode("utf-8", "surrogatepass")))

        async def handle_index(self, request: Any) -> Any:
            if not self._allowed(request.query.get("token") or request.cookies.get(COOKIE)):
                raise web.HTTPForbidden(text="jianmu-studio web: wrong or missing token (open the address with "
                                             "?token=… as the server printed it)")
            # the page's own address for its scripts and connection (bound to 0.0.0.0, the server's is no use)
            self.public_url = f"{request.scheme}://{request.host}"
            response = await super().handle_index(request)
            if self.token is not None:
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict")
            return response

        async def handle_websocket(self, request: Any) -> Any:
            """A request that is not a WebSocket handshake is refused here: textual-serve swallows the
            handshake's error and answered an empty reply."""
            if not self._allowed(request.cookies.get(COOKIE)):
                raise web.HTTPForbidden(text="jianmu-studio web: wrong or missing token")
            if not web.WebSocketResponse().can_prepare(request).ok:
                raise web.HTTPBadRequest(text="jianmu-studio web: /ws takes the page's WebSocket connection; "
                                              "open the page at / instead")
            return await super().handle_websocket(request)

    return StudioServer


__all__ = ["add_command", "serve", "studio_command"]
