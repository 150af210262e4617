"""Arize Phoenix, a real consumer of OpenTelemetry GenAI traces, started on loopback for one test.

Phoenix is a large application (~850 MB with its dependencies), so it is not one of the project's
own dependencies: it is installed once from PyPI into a venv of its own under the user's cache
(`~/.cache/jianmu-tests/phoenix`, or $JIANMU_TEST_CACHE), reused after that, and run as a
separate process with its own working directory, telemetry off. `why_not()` says why it cannot be
had (the install failed), and the test skips with that reason.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

REQUIREMENT = "arize-phoenix>=20,<21"  # the version the test was written against (20.26)
INSTALL_LIMIT = 1800  # s: a first install downloads a few hundred packages
CACHE = Path(os.environ.get("JIANMU_TEST_CACHE") or Path.home() / ".cache" / "jianmu-tests")
VENV = CACHE / "phoenix"


def _executable() -> Path:
    return VENV / "bin" / "phoenix"


def install() -> str | None:
    """Phoenix's venv made (once); None, or the reason it could not be."""
    marker = VENV / ".installed"
    if marker.is_file() and marker.read_text() == REQUIREMENT and _executable().is_file():
        return None
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, capture_output=True,
                       text=True, timeout=300)
        subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", REQUIREMENT], check=True,
                       capture_output=True, text=True, timeout=INSTALL_LIMIT)
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or exc.stdout or "").strip().splitlines()[-1:]
        return f"Phoenix ({REQUIREMENT}) could not be installed from PyPI: {' '.join(last) or exc}"
    except subprocess.TimeoutExpired:
        return f"Phoenix ({REQUIREMENT}) was not installed within {INSTALL_LIMIT} s"
    marker.write_text(REQUIREMENT)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PhoenixServer:
    """`phoenix serve` on 127.0.0.1 (free ports, a working directory in `folder`), stopped on exit."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> PhoenixServer:
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(self.folder), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_PORT": str(self.port), "PHOENIX_GRPC_PORT": str(_free_port()),
               "PHOENIX_TELEMETRY_ENABLED": "false"}
        self.log = (self.folder / "phoenix.log").open("w")
        self.process = subprocess.Popen([str(_executable()), "serve"], env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT, cwd=self.folder)
        return self

    def healthy(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"phoenix exited: {(self.folder / 'phoenix.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span Phoenix holds for `project`, through its REST API."""
        with urllib.request.urlopen(f"{self.url}/v1/projects/{project}/spans?limit=1000", timeout=30) as answer:
            return json.load(answer)["data"]

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
