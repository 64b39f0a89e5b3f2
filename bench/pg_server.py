"""A throwaway PostgreSQL server for tests and benchmarks: initdb into a temporary folder and run on
a free loopback port, so the store is tested on the scale-path database for real.

PostgreSQL refuses to run as root; when the tests do, the server runs as the
`postgres` user that Debian's package creates.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa


@dataclass(frozen=True)
class Server:
    folder: Path
    port: int
    as_user: tuple[str, ...]  # command prefix that runs as the server's owner

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://lagmon@127.0.0.1:{self.port}/postgres"

    def new_database(self, copy_of: str | None = None) -> str:
        """A fresh database, empty or a copy of the one at URL `copy_of` (nobody may be connected to it)."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        template = "" if copy_of is None else f" TEMPLATE {copy_of.rsplit('/', 1)[1]}"
        engine = sa.create_engine(self.url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}{template}")
        engine.dispose()
        return self.url.rsplit("/", 1)[0] + "/" + name


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} not found: run `make setup` (installs Debian's postgresql)")
    return found[-1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start() -> Server:
    folder = Path(tempfile.mkdtemp(prefix="lagmon-pg-"))
    as_user: tuple[str, ...] = ()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        as_user = ("runuser", "-u", "postgres", "--")
    server = Server(folder, _free_port(), as_user)
    _run(server, _bin("initdb"), "-D", str(folder / "data"), "-U", "lagmon", "--auth=trust", "-E", "UTF8", "--no-sync")
    resume(server)
    return server


def pause(server: Server) -> None:
    """Stop the server as an administrator would (fast shutdown: sessions are ended), keeping its data."""
    _run(server, _bin("pg_ctl"), "-D", str(server.folder / "data"), "-m", "fast", "-w", "stop")


def resume(server: Server) -> None:
    """Start the server (again) on its port; returns once it accepts connections."""
    folder = server.folder
    options = f"-p {server.port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    _run(
        server,
        _bin("pg_ctl"),
        "-D",
        str(folder / "data"),
        "-o",
        options,
        "-l",
        str(folder / "server.log"),
        "-w",
        "start",
    )


def _run(server: Server, *cmd: str) -> None:
    subprocess.run([*server.as_user, *cmd], check=True, capture_output=True, text=True)


def stop(server: Server) -> None:
    subprocess.run(
        [*server.as_user, _bin("pg_ctl"), "-D", str(server.folder / "data"), "-m", "immediate", "stop"],
        capture_output=True,
    )
    shutil.rmtree(server.folder, ignore_errors=True)
