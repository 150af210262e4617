"""A throw-away PostgreSQL server for the tests: its own data directory, a free loopback port and
a Unix socket in that directory, a password (so tests can check it never shows), stopped and
deleted at the end. A test run killed before its end leaves its server running: the next server
started stops and deletes those whose starting process is gone (`reap_abandoned`).

`initdb` refuses to run as root, and the tests may run as root: the server then runs as the
unprivileged `postgres` system user (`runuser`), owning only its temporary directory.
Without PostgreSQL's server binaries the tests that need it skip, saying how to get them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

PASSWORD = "s3cret-pw-do-not-print"
USER = "jianmu"
PREFIX, OWNER = "jianmu-pg-", "owner"  # a server's directory, and the file naming the process that started it
DEBIAN_DIRS = "/usr/lib/postgresql/*/bin"  # Debian keeps the server binaries off PATH, one dir per version
HOW_TO_GET = ("PostgreSQL server binaries (initdb, pg_ctl) not found: install them "
              "(`apt-get install postgresql` on Debian/Ubuntu) or point $JIANMU_PG_BIN at their directory")


def find_binaries() -> Path | None:
    """The directory holding initdb and pg_ctl: $JIANMU_PG_BIN, PATH, or Debian's versioned dirs."""
    candidates = [os.environ.get("JIANMU_PG_BIN", "")]
    if found := shutil.which("pg_ctl"):
        candidates.append(str(Path(found).resolve().parent))
    candidates += sorted(glob.glob(DEBIAN_DIRS), key=lambda d: int(Path(d).parent.name),
                         reverse=True)
    for directory in filter(None, candidates):
        if all((Path(directory) / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(directory)
    return None


def why_not() -> str | None:
    """None if a server can be started here, else the reason to skip."""
    if find_binaries() is None:
        return HOW_TO_GET
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no unprivileged `postgres` user to run the server as"
        if shutil.which("runuser") is None:
            return "running as root and `runuser` is missing (util-linux)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def reap_abandoned() -> None:
    """Stop and delete the servers whose starting process is gone (a test run killed, `kill -9`, a
    timeout): on a shared machine they would pile up, each a postmaster and its memory."""
    for root in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = int((root / OWNER).read_text())
        except (OSError, ValueError):  # being started, or not ours
            continue
        if not _alive(owner):
            PostgresServer(root).stop()


class PostgresServer:
    def __init__(self, root: Path | None = None) -> None:
        self.bin = find_binaries()
        assert self.bin is not None, HOW_TO_GET
        self.root = root or Path(tempfile.mkdtemp(prefix=PREFIX))
        self.data = self.root / "data"
        self.port = _free_port()
        self._databases = 0

    def _run(self, *argv: str) -> None:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> PostgresServer:
        reap_abandoned()
        (self.root / OWNER).write_text(str(os.getpid()))
        (self.root / "pw").write_text(PASSWORD)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            os.chown(self.root / "pw", user.pw_uid, user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", USER, f"--pwfile={self.root / 'pw'}",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-o", options, "start")
        return self

    def url(self, database: str = "postgres", *, socket: bool = False) -> str:
        """The database over loopback TCP, or (`socket`) over the Unix socket in the server's directory."""
        if socket:
            return f"postgresql://{USER}:{PASSWORD}@/{database}?host={self.root}&port={self.port}"
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def new_database(self, *, socket: bool = False) -> str:
        """The URL of a fresh, empty database."""
        import psycopg

        self._databases += 1
        name = f"t{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name, socket=socket)

    def halt(self) -> None:
        """The server goes away (as in a crash or a restart); its files stay."""
        with contextlib.suppress(RuntimeError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        if self.root.exists():
            self.halt()
        shutil.rmtree(self.root, ignore_errors=True)
