"""Schema changes applied to Iceberg as their own step (DataHub BLOB DDL text, GoldenGate drift).

Each test uses its own namespace in the session's warehouse; batches go through
the same decode -> normalize -> DDL -> truncates -> compact path as the DAG.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from cdclake.events.change import to_json
from cdclake.jobs import rebuild
from cdclake.jobs.ddl import SchemaPolicyError
from cdclake.lake.naming import spark_table_name
from cdclake.lake.tables import load_table, read_rows
from cdclake.local_apply import apply_files
from cdclake.options import Options
from cdclake.schema.evolution import HISTORY_PROPERTY, IncompatibleChange

pytestmark = pytest.mark.spark
T = "db.t"


def msg(op: str, seq: int, after=None, before=None, columns=None, ddl: str | None = None) -> dict:
    columns = columns or {}
    body: dict = {"op": op, "sequenceId": str(seq), "timestamp": {"eventTime": 1700000000000 + seq}}
    if after is not None:
        body["after"] = {"dataColumn": after}
    if before is not None:
        body["before"] = {"dataColumn": before}
    if ddl is not None:
        body["ddl"] = {"text": ddl}
    schema = {
        "dataColumn": [{"name": n, "type": t} for n, t in columns.items()],
        "primaryKey": ["id"],
        "source": {"dbType": "MySQL", "dbName": "db", "tableName": "t"},
    }
    return {"schema": schema, "payload": body, "version": "0.0.1"}


def write(path: Path, *messages: dict) -> str:
    path.write_text("".join(to_json(m) + "\n" for m in messages))
    return str(path)


def apply(spark, warehouse, ns: str, files: list[str], policy: str = "evolve") -> dict:
    return apply_files("datahub-blob", Options({}), files, warehouse, spark=spark, namespace=ns, schema_policy=policy)


def columns_of(warehouse, ns: str) -> list[tuple[str, str]]:
    schema = load_table(warehouse, T, ns).schema()
    return [(f.name, str(f.field_type)) for f in schema.fields if not f.name.startswith("_cdc_")]


OLD = {"id": "LONG", "name": "STRING"}
NEW = {"id": "LONG", "full_name": "STRING"}


def test_rename_between_old_and_new_layout_rows_then_rebuild_from_change_log(spark, warehouse, tmp_path):
    ns = "sc_rename"
    r1 = apply(
        spark,
        warehouse,
        ns,
        [
            write(
                tmp_path / "b1.json",
                msg("INSERT", 1, after={"id": 1, "name": "a"}, columns=OLD),
                msg("INSERT", 2, after={"id": 2, "name": "b"}, columns=OLD),
            )
        ],
    )
    assert r1["balanced"] and r1["applied"] == 2
    r2 = apply(
        spark,
        warehouse,
        ns,
        [
            write(
                tmp_path / "b2.json",
                msg("UPDATE", 3, before={"id": 1, "name": "a"}, after={"id": 1, "name": "a2"}, columns=OLD),
                msg("ALTER", 4, ddl="ALTER TABLE t RENAME COLUMN name TO full_name"),
                msg("UPDATE", 5, before={"id": 2, "full_name": "b"}, after={"id": 2, "full_name": "b2"}, columns=NEW),
                msg("INSERT", 6, after={"id": 3, "full_name": "c"}, columns=NEW),
            )
        ],
    )
    assert r2["balanced"], r2
    assert (r2["applied"], r2["non_row"], r2["quarantined"], r2["schema_changes"]) == (3, 1, 0, 1)
    entry = r2["tables"][T]
    assert [c["kind"] for c in entry["schema_changes"]] == ["rename_column"]
    assert "RENAME COLUMN name TO full_name" in entry["schema_changes"][0]["source_event"]
    # the recorded schema id is the table's schema after the rename (not the id it was created with)
    name = spark_table_name(T, ns)
    newest = f"SELECT latest_schema_id FROM {name}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    schema_now = spark.sql(newest).first()["latest_schema_id"]
    assert entry["schema_version"] == schema_now == load_table(warehouse, T, ns).metadata.current_schema_id >= 1
    history = json.loads(load_table(warehouse, T, ns).properties[HISTORY_PROPERTY])
    assert [h["schema_id"] for h in history] == [schema_now]
    expected = [{"id": 1, "full_name": "a2"}, {"id": 2, "full_name": "b2"}, {"id": 3, "full_name": "c"}]
    assert read_rows(warehouse, T, namespace=ns) == expected  # through pyiceberg
    assert columns_of(warehouse, ns) == [("id", "long"), ("full_name", "string")]
    through_spark = sorted((r["id"], r["full_name"]) for r in spark.table(name).collect())
    assert through_spark == [(1, "a2"), (2, "b2"), (3, "c")]
    # rebuild from the change log (old events still say "name") gives the same table
    report = rebuild.run(spark, warehouse / "_staging", [T], "changelog", "rb1")
    assert report["tables"][T]["status"] == "committed"
    assert read_rows(warehouse, T, namespace=ns) == expected


def test_add_widen_and_drop_in_one_batch_with_rows_between(spark, warehouse, tmp_path):
    ns = "sc_evolve"
    base = {"id": "LONG", "name": "STRING", "note": "STRING"}
    apply(
        spark,
        warehouse,
        ns,
        [write(tmp_path / "b1.json", msg("INSERT", 1, after={"id": 1, "name": "a", "note": "x"}, columns=base))],
    )
    with_amount = {**base, "amount": "STRING"}
    after_drop = {"id": "LONG", "name": "STRING", "amount": "STRING"}
    r = apply(
        spark,
        warehouse,
        ns,
        [
            write(
                tmp_path / "b2.json",
                msg("ALTER", 2, ddl="ALTER TABLE t ADD COLUMN amount DECIMAL(10,2)"),
                msg("INSERT", 3, after={"id": 2, "name": "b", "note": "y", "amount": "1.50"}, columns=with_amount),
                msg("ALTER", 4, ddl="ALTER TABLE t MODIFY COLUMN amount DECIMAL(14,2)"),
                msg("ALTER", 5, ddl="ALTER TABLE t DROP COLUMN note"),
                msg("INSERT", 6, after={"id": 3, "name": "c", "amount": "123456789.25"}, columns=after_drop),
            )
        ],
    )
    assert r["balanced"] and r["quarantined"] == 0, r
    assert [c["kind"] for c in r["tables"][T]["schema_changes"]] == ["add_column", "modify_column", "drop_column"]
    assert columns_of(warehouse, ns) == [("id", "long"), ("name", "string"), ("amount", "decimal(14, 2)")]
    assert read_rows(warehouse, T, namespace=ns) == [
        {"id": 1, "name": "a", "amount": None},  # written before the column existed: NULL
        {"id": 2, "name": "b", "amount": Decimal("1.50")},
        {"id": 3, "name": "c", "amount": Decimal("123456789.25")},
    ]


def _table_state(warehouse, ns: str):
    table = load_table(warehouse, T, ns)
    return table.metadata_location, Path(table.metadata_location.removeprefix("file:")).read_bytes()


def test_fail_policy_leaves_the_table_byte_identical_and_names_the_change(spark, warehouse, tmp_path):
    ns = "sc_fail"
    apply(
        spark, warehouse, ns, [write(tmp_path / "b1.json", msg("INSERT", 1, after={"id": 1, "name": "a"}, columns=OLD))]
    )
    before = _table_state(warehouse, ns)
    rows = read_rows(warehouse, T, namespace=ns)
    b2 = write(
        tmp_path / "b2.json",
        msg("ALTER", 2, ddl="ALTER TABLE t ADD COLUMN email VARCHAR(64)"),
        msg("INSERT", 3, after={"id": 2, "name": "b", "email": "b@x"}, columns={**OLD, "email": "STRING"}),
    )
    with pytest.raises(SchemaPolicyError) as err:
        apply(spark, warehouse, ns, [b2], policy="fail")
    message = str(err.value)
    assert "db.t" in message and "add column email" in message and "ADD COLUMN email VARCHAR(64)" in message
    assert _table_state(warehouse, ns) == before
    assert read_rows(warehouse, T, namespace=ns) == rows


def test_ignore_policy_counts_and_keeps_the_layout(spark, warehouse, tmp_path):
    ns = "sc_ignore"
    apply(
        spark, warehouse, ns, [write(tmp_path / "b1.json", msg("INSERT", 1, after={"id": 1, "name": "a"}, columns=OLD))]
    )
    r = apply(
        spark,
        warehouse,
        ns,
        [
            write(
                tmp_path / "b2.json",
                msg("ALTER", 2, ddl="ALTER TABLE t ADD COLUMN email VARCHAR(64)"),
                msg("INSERT", 3, after={"id": 2, "name": "b", "email": "b@x"}, columns={**OLD, "email": "STRING"}),
            )
        ],
        policy="ignore",
    )
    assert r["balanced"] and r["applied"] == 1 and r["quarantined"] == 0, r
    assert r["tables"][T]["schema_changes_ignored"] == 1 and r["tables"][T]["schema_policy"] == "ignore"
    assert read_rows(warehouse, T, namespace=ns) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


def test_incompatible_change_fails_with_a_rebuild_hint(spark, warehouse, tmp_path):
    ns = "sc_incompatible"
    apply(
        spark, warehouse, ns, [write(tmp_path / "b1.json", msg("INSERT", 1, after={"id": 1, "name": "a"}, columns=OLD))]
    )
    before = _table_state(warehouse, ns)
    with pytest.raises(IncompatibleChange) as err:
        apply(
            spark,
            warehouse,
            ns,
            [write(tmp_path / "b2.json", msg("ALTER", 2, ddl="ALTER TABLE t MODIFY COLUMN name INT"))],
        )
    assert "string cannot change to bigint" in str(err.value) and "cdc_rebuild" in str(err.value)
    assert _table_state(warehouse, ns) == before


def test_truncate_statement_goes_to_the_truncate_step_with_its_seq(spark, warehouse, tmp_path):
    ns = "sc_truncate"
    apply(
        spark, warehouse, ns, [write(tmp_path / "b1.json", msg("INSERT", 1, after={"id": 1, "name": "a"}, columns=OLD))]
    )
    r = apply(
        spark,
        warehouse,
        ns,
        [
            write(
                tmp_path / "b2.json",
                msg("INSERT", 2, after={"id": 2, "name": "b"}, columns=OLD),
                msg("QUERY", 3, ddl="TRUNCATE TABLE t"),
                msg("INSERT", 4, after={"id": 3, "name": "c"}, columns=OLD),
            )
        ],
    )
    assert r["balanced"], r
    assert r["tables"][T]["truncates"] == 1 and r["tables"][T]["truncate_watermark"].endswith("3")
    assert read_rows(warehouse, T, namespace=ns) == [{"id": 3, "name": "c"}]


def test_unparseable_ddl_is_quarantined_with_the_reason(spark, warehouse, tmp_path):
    ns = "sc_badddl"
    r = apply(
        spark,
        warehouse,
        ns,
        [
            write(
                tmp_path / "b1.json",
                msg("INSERT", 1, after={"id": 1, "name": "a"}, columns=OLD),
                msg("ALTER", 2, ddl="ALTER TABLE t ADD COLUMN ((("),
            )
        ],
    )
    assert r["balanced"] and r["quarantined"] == 1 and r["applied"] == 1, r
    import pyarrow.parquet as pq

    batch = next((warehouse / "_staging").glob("*/quarantine/ddl"))
    reasons = pq.read_table(batch).to_pylist()
    assert reasons[0]["source_offset"] > 0 and "DDL statement not understood" in reasons[0]["error"]
    assert reasons[0]["source_file"].endswith("b1.json") and reasons[0]["raw"] is None


def _on(table: str, message: dict) -> dict:
    message["schema"]["source"]["tableName"] = table
    return message


def test_the_tables_of_a_batch_evolve_side_by_side_and_a_refusal_names_the_first_table(spark, warehouse, tmp_path):
    ns = "sc_threads"
    names = ["t3", "t1", "t2"]
    first = [_on(t, msg("INSERT", i, after={"id": 1, "name": t}, columns=OLD)) for i, t in enumerate(names, 1)]
    apply(spark, warehouse, ns, [write(tmp_path / "b1.json", *first)])
    added = {**OLD, "email": "STRING"}

    def second(path: Path, seq: int) -> str:
        return write(
            path,
            *[
                _on(t, msg("ALTER", seq + i, ddl=f"ALTER TABLE {t} ADD COLUMN email VARCHAR(64)"))
                for i, t in enumerate(names)
            ],
            *[
                _on(t, msg("INSERT", seq + 9 + i, after={"id": 2, "name": t, "email": f"{t}@x"}, columns=added))
                for i, t in enumerate(names)
            ],
        )

    with pytest.raises(SchemaPolicyError) as err:
        apply(spark, warehouse, ns, [second(tmp_path / "b2.json", 10)], policy="fail")
    assert "db.t1" in str(err.value)  # the first refused table by name, whichever thread finished first
    r = apply(spark, warehouse, ns, [second(tmp_path / "b3.json", 30)])
    assert r["balanced"] and r["applied"] == 3, r
    for t in names:
        assert [c["kind"] for c in r["tables"][f"db.{t}"]["schema_changes"]] == ["add_column"]
        schema = load_table(warehouse, f"db.{t}", ns).schema()
        assert "email" in [f.name for f in schema.fields]
        assert {"id": 2, "name": t, "email": f"{t}@x"} in read_rows(warehouse, f"db.{t}", namespace=ns)
