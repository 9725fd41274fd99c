"""Airflow's public REST API (``/api/v2``) the way the UI and scripts call it: a token from ``/auth/token``.

Only what the stack test drives: pause / unpause, trigger with Params, wait for a run, read its
task instances and XComs, clear failed tasks, follow a backfill.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

FINISHED = {"success", "failed"}


@dataclass
class AirflowApi:
    base: str
    username: str
    password: str
    timeout: float = 30.0
    _client: httpx.Client | None = field(default=None, repr=False)

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            token = httpx.post(
                f"{self.base}/auth/token",
                json={"username": self.username, "password": self.password},
                timeout=self.timeout,
            )
            token.raise_for_status()
            self._client = httpx.Client(
                base_url=f"{self.base}/api/v2",
                headers={"Authorization": f"Bearer {token.json()['access_token']}"},
                timeout=self.timeout,
            )
        return self._client

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.client.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:2000]}")
        return response.json() if response.content else None

    def wait_for_dag(self, dag_id: str, timeout: float = 180) -> dict[str, Any]:
        """The DAG once the dag-processor has parsed and serialized it."""
        deadline = time.monotonic() + timeout
        while True:
            response = self.client.get(f"/dags/{dag_id}")
            if response.status_code == 200:
                return response.json()
            if time.monotonic() > deadline:
                raise TimeoutError(f"DAG {dag_id} not there after {timeout:.0f} s: {response.text[:500]}")
            time.sleep(2)

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self.call("PATCH", f"/dags/{dag_id}", json={"is_paused": paused})

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None, logical_date: str | None = None) -> str:
        """A manual run (the UI's trigger form); its run id."""
        run = self.call("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": logical_date, "conf": conf or {}})
        return run["dag_run_id"]

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}")

    def runs(self, dag_id: str, **params: Any) -> list[dict[str, Any]]:
        return self.call("GET", f"/dags/{dag_id}/dagRuns", params={"limit": 100, **params})["dag_runs"]

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 900) -> dict[str, Any]:
        """The run once it finished (success or failed)."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.run(dag_id, run_id)
            if run["state"] in FINISHED:
                return run
            if time.monotonic() > deadline:
                raise TimeoutError(f"{dag_id} {run_id} still {run['state']} after {timeout:.0f} s")
            time.sleep(3)

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 100})[
            "task_instances"
        ]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        """``task_id`` (``task_id[i]`` when mapped) -> state."""
        return {
            ti["task_id"] + (f"[{ti['map_index']}]" if ti["map_index"] >= 0 else ""): ti["state"]
            for ti in self.task_instances(dag_id, run_id)
        }

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
        return self.call("GET", path, params={"deserialize": True, "stringify": False})["value"]

    def clear_failed(self, dag_id: str, run_id: str, task_ids: list[str]) -> list[dict[str, Any]]:
        """Clear failed ``task_ids`` of a run and what follows them (the UI's "Clear" with "Downstream")."""
        body = {
            "dry_run": False,
            "dag_run_id": run_id,
            "task_ids": task_ids,
            "only_failed": True,
            "include_downstream": True,
            "reset_dag_runs": True,
        }
        return self.call("POST", f"/dags/{dag_id}/clearTaskInstances", json=body)["task_instances"]

    def wait_for_task_state(
        self, dag_id: str, run_id: str, task_id: str, states: set[str], timeout: float = 600
    ) -> str:
        deadline = time.monotonic() + timeout
        while True:
            found = {s for name, s in self.task_states(dag_id, run_id).items() if name.split("[")[0] == task_id}
            if found and found <= states:
                return next(iter(found))
            if time.monotonic() > deadline:
                raise TimeoutError(f"{dag_id} {run_id} {task_id}: {found}, not in {states} after {timeout:.0f} s")
            time.sleep(3)

    def backfills(self, dag_id: str) -> list[dict[str, Any]]:
        return self.call("GET", "/backfills", params={"dag_id": dag_id, "limit": 100})["backfills"]

    def wait_for_backfill(self, backfill_id: int, timeout: float = 1200) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            backfill = self.call("GET", f"/backfills/{backfill_id}")
            if backfill.get("completed_at"):
                return backfill
            if time.monotonic() > deadline:
                raise TimeoutError(f"backfill {backfill_id} not completed after {timeout:.0f} s")
            time.sleep(5)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
