"""`jianmu-studio web`: the studio served by textual-serve, in the machine's headless Chromium driven over
its DevTools protocol (chromium.py). The page loads, a key press steps the run, the store shows the new
checkpoint; the token rule when not on loopback; the keys line drawn before the page is clicked.

Screenshots of each page are written to $JIANMU_SCREENSHOTS when set (to look at them)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from chromium import Chromium, why_not
from textual.widgets._footer import FooterKey
from tui_fixtures import pipeline_session
from waiting import wait_for

from runtime.memory.checkpoint import StoreError, open_store
from studio.app import StudioApp
from studio.widgets.footer import KeysFooter

pytest.importorskip("textual_serve", reason="the [web] extra is not installed")

ROOT = Path(__file__).resolve().parents[1]


class WebStudio:
    """`jianmu-studio web TREE` in a subprocess, its address read from the line it prints."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str] | None = None):
        environment = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"), **(env or {})}
        self.process = subprocess.Popen([sys.executable, "-m", "studio.cli", "web", *args], cwd=tmp_path,
                                        env=environment, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        self.lines = []
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if found := re.search(r"at (http://\S+)$", line.rstrip()):
                self.url = found.group(1)
                break
        else:
            raise AssertionError(f"web exited: {self.lines}")
        self.port = int(self.url.split(":")[2].split("/")[0])
        wait_for(self._listening, f"the web server on port {self.port}")  # it says where before it listens

    def _listening(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        except OSError:
            return False
        return True

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        assert self.process.stderr is not None
        self.process.stderr.close()


def ticks(store: Path) -> list[int]:
    """The ticks of the store's checkpoints (none while it does not exist yet)."""
    try:
        opened = open_store(store, create=False)
    except StoreError:
        return []
    try:
        return [info.tick for info in opened.list()]
    finally:
        opened.close()


def keep(page, name: str) -> None:
    folder = os.environ.get("JIANMU_SCREENSHOTS")
    if folder:
        page.screenshot(Path(folder) / name)


@pytest.mark.skipif(why_not() is not None, reason=why_not() or "")
def test_the_studio_in_a_browser_steps_on_a_key_and_records_the_checkpoint(tmp_path):
    store = tmp_path / "web.db"
    server = WebStudio(tmp_path, "text_pipeline", "--db", str(store), "--at", "127.0.0.1:0")
    try:
        assert server.url.startswith("http://127.0.0.1:") and "token" not in server.url  # loopback: no token
        with Chromium(tmp_path) as browser:
            page = browser.page()
            page.navigate(server.url)
            wait_for(lambda: "-first-byte" in (page.evaluate("document.body.className") or ""), "the studio's first bytes")
            wait_for(lambda: ticks(store) == [0], "the run's input checkpoint (tick 0)")
            keep(page, "web-loaded.png")
            page.evaluate("document.querySelector('.xterm-helper-textarea').focus()")  # as a click on the page
            page.press("n")
            wait_for(lambda: ticks(store) == [0, 1], "the checkpoint of the tick the key stepped")
            keep(page, "web-stepped.png")
            page.press("?")
            page.call("Runtime.evaluate", expression="new Promise(r => setTimeout(r, 500))", awaitPromise=True)
            keep(page, "web-help.png")
    finally:
        server.close()


def test_bound_elsewhere_a_page_needs_the_token(tmp_path):
    server = WebStudio(tmp_path, "text_pipeline", "--db", str(tmp_path / "web.db"), "--at", "0.0.0.0:0",
                       env={"JIANMU_DEBUG_TOKEN": "s3cret"})
    try:
        assert server.url.endswith("/?token=s3cret")
        assert any("reachable from other machines" in line for line in server.lines)
        port = server.port
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/?token=wrong", timeout=30)
        assert refused.value.code == 403
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/?token=s3cret", timeout=30) as page:
            html = page.read().decode()
            assert "jianmu_token=s3cret" in page.headers["Set-Cookie"]
        assert f'data-session-websocket-url="ws://127.0.0.1:{port}/ws"' in html  # the page's address, not 0.0.0.0
    finally:
        server.close()


def test_a_plain_request_to_the_pages_connection_is_refused_in_one_line(tmp_path):
    server = WebStudio(tmp_path, "text_pipeline", "--db", str(tmp_path / "web.db"), "--at", "127.0.0.1:0")
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/ws", timeout=30)
        assert refused.value.code == 400
        assert "open the page at / instead" in refused.value.read().decode()
    finally:
        server.close()


def test_a_bad_address_or_tree_is_one_line(tmp_path):
    for args, said in [(["text_pipeline", "--at", "nowhere"], "--at nowhere: debug address 'nowhere'"),
                       (["no_such_sample"], "no_such_sample: no such tree file or sample")]:
        result = subprocess.run([sys.executable, "-m", "studio.cli", "web", *args], capture_output=True, text=True,
                                cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and said in result.stderr


async def test_the_keys_line_is_drawn_before_the_page_is_clicked():
    """Textual's web driver starts an app unfocused until the page is clicked; the keys show all the same."""
    app = StudioApp(pipeline_session())
    app.set_reactive(StudioApp.app_focus, False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        keys = [key.key for key in app.screen.query_one(KeysFooter).query(FooterKey)]
        assert {"n", "s", "c"} <= set(keys)
