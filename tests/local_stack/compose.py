"""Settings of docker-compose.yaml, mapped onto one machine.

The stack test must run what the compose file says, not a copy of it that can drift: every
service's environment and command are read from the file (with ``.env``-style variables
substituted as ``docker compose`` does) and only where things are is changed: service host names
and container ports become ``127.0.0.1`` and free local ports, container paths become folders of
the repository or of the stack's temporary home.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cdclake.runtime.settings import REPO_ROOT

COMPOSE_FILE = REPO_ROOT / "docker-compose.yaml"
ENV_EXAMPLE = REPO_ROOT / ".env.example"
LOCALHOST = "127.0.0.1"

_VARIABLE = re.compile(r"\$\$|\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|\$(?P<bare>\w+)")


def interpolate(text: str, variables: Mapping[str, str]) -> str:
    """``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?error}``, ``$VAR`` and ``$$`` as compose does."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group("name") or match.group("bare")
        op, arg = match.group("op") or "", match.group("arg") or ""
        value = variables.get(name)
        if op.endswith("?") and (value is None or (op == ":?" and value == "")):
            raise ValueError(f"compose variable {name} is required: {arg}")
        if op.endswith("-") and (value is None or (op == ":-" and value == "")):
            return arg
        return value or ""

    return _VARIABLE.sub(replace, text)


def read_env_file(path: Path = ENV_EXAMPLE) -> dict[str, str]:
    """``KEY=value`` lines of an ``.env`` file (comments and blank lines skipped)."""
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def load_services(variables: Mapping[str, str], path: Path = COMPOSE_FILE) -> dict[str, dict[str, Any]]:
    """The services of the compose file with variables substituted (YAML anchors and merges resolved)."""
    raw = yaml.safe_load(path.read_text())

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return interpolate(value, variables)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return walk(raw["services"])


@dataclass(frozen=True)
class Placement:
    """Where each compose service's ports and each container path are on this machine."""

    #: (service, container port) -> local port
    ports: dict[tuple[str, int], int]
    #: container path prefix -> local path (longest prefix wins)
    paths: dict[str, str] = field(default_factory=dict)

    @property
    def services(self) -> set[str]:
        return {service for service, _ in self.ports}

    def port(self, service: str, container_port: int) -> int:
        return self.ports[(service, container_port)]

    def text(self, value: str) -> str:
        """A setting's text with ``service:port``, service host names and container paths made local."""
        stripped = value.strip()
        if stripped.startswith("{"):
            try:
                parsed = json.loads(stripped)
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                return json.dumps(self._connection(parsed))
        for (service, port), local in self.ports.items():
            value = re.sub(rf"(?<![\w.-]){re.escape(service)}:{port}(?!\d)", f"{LOCALHOST}:{local}", value)
        for service in self.services:
            value = re.sub(rf"(?<=://){re.escape(service)}(?![\w.-])", LOCALHOST, value)
        for prefix in sorted(self.paths, key=len, reverse=True):
            value = re.sub(rf"(?<![\w.-]){re.escape(prefix)}(?=/|\b|$)", self.paths[prefix], value)
        return value

    def _connection(self, conn: dict[str, Any]) -> dict[str, Any]:
        """An Airflow connection as JSON: a ``host`` naming a service and its ``port`` move together."""
        conn = {k: (self._connection(v) if isinstance(v, dict) else v) for k, v in conn.items()}
        host = conn.get("host")
        if isinstance(host, str):
            service = next((s for s in self.services if re.search(rf"(^|://){re.escape(s)}$", host)), None)
            if service is not None and isinstance(conn.get("port"), int):
                conn["port"] = self.port(service, conn["port"])
            conn["host"] = self.text(host) if service is None else host[: len(host) - len(service)] + LOCALHOST
        return {k: (self.text(v) if isinstance(v, str) and k != "host" else v) for k, v in conn.items()}

    def environment(self, service: dict[str, Any]) -> dict[str, str]:
        env = service.get("environment") or {}
        if isinstance(env, list):
            env = dict(item.split("=", 1) for item in env)
        return {key: self.text(str(value)) for key, value in env.items()}

    def command(self, name: str, service: dict[str, Any]) -> list[str]:
        """The service's command: its own container ports and other services' host names made local."""
        command = service.get("command") or []
        if isinstance(command, str):
            command = command.split()
        own = {str(port): str(local) for (svc, port), local in self.ports.items() if svc == name}
        out = []
        for token in map(str, command):
            if token in own:
                out.append(own[token])
            elif token in self.services:
                out.append(LOCALHOST)
            else:
                out.append(self.text(token))
        return out
