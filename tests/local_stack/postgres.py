"""The compose ``postgres`` service from Debian's PostgreSQL package: a private cluster in a temporary folder.

Like the ``postgres`` image it creates the superuser ``POSTGRES_USER`` with ``POSTGRES_PASSWORD``
and the database ``POSTGRES_DB``, and accepts password logins on TCP only. PostgreSQL refuses
to run as root, so as root the cluster belongs to the package's ``postgres`` user (or ``nobody``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

from local_stack.processes import Service, run

INSTALL_HINT = "PostgreSQL server missing: apt-get install postgresql (`make stack-deps`)"


def postgres_bin() -> Path:
    """The newest installed server's bin folder (Debian: /usr/lib/postgresql/<major>/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise FileNotFoundError(INSTALL_HINT)
    return found[-1].parent


def service_user() -> str | None:
    """Who runs the server: ourselves, or as root an unprivileged account."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and there is no unprivileged user (postgres, nobody) for PostgreSQL")


class Postgres:
    """initdb + postgres on ``port``; :meth:`stop` also deletes the cluster."""

    def __init__(self, port: int, environment: dict[str, str], logs: Path) -> None:
        self.port = port
        self.user = environment.get("POSTGRES_USER", "postgres")
        self.password = environment["POSTGRES_PASSWORD"]
        self.database = environment.get("POSTGRES_DB", self.user)
        self.logs = logs
        self.run_as = service_user()
        # Outside pytest's root-only temp folders: the server's user must reach its data folder.
        self.root = Path(tempfile.mkdtemp(prefix="cdclake-postgres-"))
        self.service: Service | None = None

    def start(self, timeout: float = 60) -> Postgres:
        bin_dir = postgres_bin()
        data, sockets, pwfile = self.root / "data", self.root / "sockets", self.root / "pwfile"
        sockets.mkdir()
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        if self.run_as is not None:
            for path in (self.root, sockets, pwfile):
                shutil.chown(path, self.run_as)
        env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", self.user, f"--pwfile={pwfile}", "-E", "UTF8"]
        run([*initdb, "--auth-host=scram-sha-256", "--auth-local=peer"], env, self.logs / "initdb.log", self.run_as)
        pwfile.unlink()
        server = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(self.port), "-k", str(sockets)]
        server += ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "fsync=off"]
        self.service = Service("postgres", server, env, self.logs / "postgres.log", user=self.run_as).start()
        ready = [str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user]

        def accepting() -> bool:
            import subprocess

            return subprocess.run(ready, capture_output=True, check=False).returncode == 0

        self.service.wait_until(accepting, timeout, "accepting connections")
        self._create_database()
        return self

    def _create_database(self) -> None:
        """What the image does with POSTGRES_DB: a database owned by the superuser."""
        import psycopg2
        from psycopg2 import sql

        conn = psycopg2.connect(
            host="127.0.0.1", port=self.port, dbname="postgres", user=self.user, password=self.password
        )
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.database,))
            if cur.fetchone() is None:
                cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database)))
        conn.close()

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop(grace=15)
        shutil.rmtree(self.root, ignore_errors=True)
