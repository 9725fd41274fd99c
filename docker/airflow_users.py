"""Write the Simple auth manager's passwords file from the environment, before the api-server starts.

Airflow 3's default auth manager otherwise generates a random password per user
and prints it in the api-server log. Environment: AIRFLOW_ADMIN_PASSWORD and
AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE; the user names come from
AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS (``name:role,...``), all given that password.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def main() -> None:
    path = Path(os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])
    users = [item.split(":")[0] for item in os.environ.get("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", "").split(",")]
    password = os.environ["AIRFLOW_ADMIN_PASSWORD"]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({user: password for user in users if user}) + "\n")
    tmp.chmod(0o600)
    tmp.replace(path)
    print(f"wrote the passwords of {len([u for u in users if u])} user(s) to {path}")


if __name__ == "__main__":
    main()
