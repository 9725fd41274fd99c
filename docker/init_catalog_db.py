"""Create (or update) the PostgreSQL role and database of the Iceberg catalog; idempotent.

Run by the ``airflow-init`` service of docker-compose.yaml, connected as the
PostgreSQL superuser of the stack. Spark creates the catalog's tables on first use.
Environment: POSTGRES_HOST, POSTGRES_USER, POSTGRES_PASSWORD (superuser),
CDCLAKE_CATALOG_DB, CDCLAKE_CATALOG_USER, CDCLAKE_CATALOG_PASSWORD. Passwords are never printed.
"""

from __future__ import annotations

import os

import psycopg2
from psycopg2 import sql


def main() -> None:
    database = os.environ.get("CDCLAKE_CATALOG_DB", "iceberg")
    user = os.environ["CDCLAKE_CATALOG_USER"]
    password = os.environ["CDCLAKE_CATALOG_PASSWORD"]
    conn = psycopg2.connect(
        host=os.environ.get("POSTGRES_HOST", "postgres"),
        port=int(os.environ.get("POSTGRES_PORT", "5432")),
        dbname=os.environ.get("POSTGRES_DB", "airflow"),
        user=os.environ["POSTGRES_USER"],
        password=os.environ["POSTGRES_PASSWORD"],
    )
    conn.autocommit = True  # CREATE DATABASE cannot run inside a transaction
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,))
        verb = "ALTER" if cur.fetchone() else "CREATE"
        cur.execute(sql.SQL(verb + " ROLE {} LOGIN PASSWORD %s").format(sql.Identifier(user)), (password,))
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
        if cur.fetchone() is None:
            cur.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(user)))
            print(f"created database {database} owned by {user}")
        else:
            print(f"database {database} exists; role {user} updated")
    conn.close()


if __name__ == "__main__":
    main()
