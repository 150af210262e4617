"""The machine's headless Chromium, driven over its DevTools protocol (websockets' sync client), for the
tests that look at the studio in a real browser.

    with Chromium(tmp_path) as browser:
        page = browser.page()
        page.navigate(url); page.press("n"); page.screenshot(path)

`why_not()` is the reason a test skips: no `chromium` on PATH (CI installs it: .ci/run).
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shutil
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

START_LIMIT = 60.0  # s: generous; only a browser that never starts is a failure
SIZE = (1280, 800)


def executable() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def why_not() -> str | None:
    return None if executable() else "no chromium on PATH (apt-get install chromium; .ci/run installs it in CI)"


class Page:
    """One tab: commands by name, answers by id (events in between are dropped)."""

    def __init__(self, websocket: Any):
        self._ws = websocket
        self._id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=START_LIMIT))
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def navigate(self, url: str) -> None:
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=SIZE[0], height=SIZE[1], deviceScaleFactor=1,
                  mobile=False)
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def press(self, key: str, code: str | None = None, key_code: int | None = None, text: str | None = None) -> None:
        """A key press as a keyboard makes it (down with its text, then up), to the focused element."""
        code = code or (f"Key{key.upper()}" if len(key) == 1 and key.isalpha() else key)
        key_code = key_code or (ord(key.upper()) if len(key) == 1 else 0)
        text = key if text is None and len(key) == 1 else (text or "")
        self.call("Input.dispatchKeyEvent", type="keyDown", key=key, code=code, windowsVirtualKeyCode=key_code,
                  text=text, unmodifiedText=text)
        self.call("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=key_code)

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path



class Chromium:
    """A headless Chromium with its own profile in `folder`, killed on exit."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.process: subprocess.Popen | None = None
        self.port = 0
        self._connections = contextlib.ExitStack()

    def __enter__(self) -> Chromium:
        profile = self.folder / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [str(executable()), "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--no-first-run", f"--window-size={SIZE[0]},{SIZE[1]}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        for line in self.process.stderr:  # "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…"
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if found:
                self.port = int(found.group(1))
                break
        else:
            raise AssertionError(f"chromium exited before it listened (exit {self.process.wait()})")
        # its later chatter read away, or a full pipe would stop it
        threading.Thread(target=self.process.stderr.read, daemon=True).start()
        return self

    def page(self) -> Page:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=START_LIMIT) as answer:
            targets = json.load(answer)
        target = next(t for t in targets if t["type"] == "page")
        return Page(self._connections.enter_context(
            connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=START_LIMIT)))

    def __exit__(self, *exc: Any) -> None:
        self._connections.close()
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            if self.process.stderr is not None:
                self.process.stderr.close()
