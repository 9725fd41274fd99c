"""Crashes and retries with real processes (issue 7): ``spark_jobs/compact.py`` under spark-submit, killed by
SIGKILL at each fault point (``cdclake.runtime.faults``), must leave the table at its previous snapshot with nothing of
the dead attempt visible, and its retry must converge to the right table and a balanced report. Staging killed
between copy and ledger must neither duplicate nor skip a file. Two compactions of one table at once must both
end right (the loser of the commit race re-reads and folds again).

Cost: each spark-submit is a JVM start. The compact fault points share one warehouse (the test session's) and
one staged batch, one lake table per point, so a point costs one killed process; one retry process then
compacts the whole batch, as a re-run of the DAG's compact step would.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from cdclake.lake.naming import spark_table_name
from cdclake.lake.tables import BATCH_PROPERTY, load_table, read_rows, snapshot_summaries
from cdclake.local_apply import apply_files
from cdclake.merge import bucket_of, key_of
from cdclake.options import Options
from cdclake.pipeline import build_report
from cdclake.runtime.settings import Settings
from cdclake.staging.batch import Manifest, read_manifest
from cdclake.staging.reading import STAGED_SUFFIX, read_staged_raw
from cdclake.staging.stage import content_batch_id, sha256_of, stage_files

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
BUCKETS = 16
#: Compact fault points in the order a run meets them; the lake table of each case is named after it.
COMPACT_POINTS = [
    "compact:before-log-append",
    "compact:after-log-append",
    "compact:before-write",
    "compact:after-files-written",
    "compact:during-commit",
    "compact:after-commit",
    "compact:before-history",
    "merge:during-commit",
    "merge:after-commit",
]
#: Points whose kill comes after the overwrite commit: the crash leaves the new rows, not the old ones.
COMMITTED_POINTS = {"compact:after-commit", "compact:before-history", "merge:after-commit"}
#: Points after which the dead write must have left Iceberg data files that no snapshot references.
ORPHAN_POINTS = {"compact:after-files-written", "compact:during-commit", "merge:during-commit"}
#: ``compact:before-history`` is ``compact:after-commit`` on a table with SCD2 history: killed between the
#: table's commit and its history's commit.
FAULT_OF = {
    "compact:before-history": "compact:after-commit",
    "merge:during-commit": "compact:during-commit",
    "merge:after-commit": "compact:after-commit",
}
#: ``merge:*`` are the same kills on tables that take the merge-on-read path (a MERGE into a private branch,
#: published by fast-forwarding main): creating the branch is itself a metadata commit, so there the table
#: keeps its snapshot and rows, not its metadata file.
MERGE_POINTS = {"merge:during-commit", "merge:after-commit"}
SCD2_POINTS = {"compact:before-history"}
RACE = "CRASH.RACE"
SUBPROCESS_TIMEOUT_S = 600


def table_of(point: str) -> str:
    prefix = "CRASH.MOR_" if point in MERGE_POINTS else "CRASH."
    return prefix + point.split(":", 1)[1].replace("-", "_").upper()


def gg(table: str, op: str, pos: int, before: dict | None = None, after: dict | None = None) -> str:
    msg: dict[str, Any] = {
        "table": table,
        "op_type": op,
        "op_ts": f"2024-01-01 00:{pos // 60 % 60:02d}:{pos % 60:02d}.000000",
        "pos": f"{pos:020d}",
    }
    if before is not None:
        msg["before"] = before
    if after is not None:
        msg["after"] = after
    return json.dumps(msg)


def first_batch(table: str) -> list[str]:
    return [gg(table, "I", i, after={"id": i, "v": f"a{i}"}) for i in range(1, 7)]


def second_batch(table: str) -> list[str]:
    """Update, delete, key change (3 -> 30, ``v`` kept), insert, a stale replay and a bad id (quarantined)."""
    return [
        gg(table, "U", 20, before={"id": 1}, after={"id": 1, "v": "b1"}),
        gg(table, "D", 21, before={"id": 2}),
        gg(table, "U", 22, before={"id": 3}, after={"id": 30}),
        gg(table, "I", 23, after={"id": 7, "v": "b7"}),
        gg(table, "I", 3, after={"id": 4, "v": "stale"}),
        gg(table, "I", 24, after={"id": "not-a-number", "v": "bad"}),
    ]


BEFORE = [(i, f"a{i}") for i in range(1, 7)]
AFTER = [(1, "b1"), (4, "a4"), (5, "a5"), (6, "a6"), (7, "b7"), (30, "a3")]
#: Per table of the second batch: applied, stale, quarantined by compact.
SECOND_COUNTS = (4, 1, 1)
#: Events of the second batch that reach the change log (the bad id is quarantined).
SECOND_LOGGED = 5


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def prepare(spark, warehouse: Path, path: Path, scd2: list[str] | None = None) -> Path:
    """Stage a batch and run every step before compact (decode, normalize, DDL, truncate) in process."""
    from cdclake.jobs import ddl, decode, normalize, truncate

    options = {"keys": "id"}
    batch_id = content_batch_id([path], "goldengate-json", {**options, "crash-test": "1"})
    manifest = Manifest(
        source="crash",
        batch_id=batch_id,
        format="goldengate-json",
        options=options,
        keys={"*": ["id"]},
        scd2=list(scd2 or []),
    )
    stage_files([str(path)], warehouse / "_staging", manifest)
    batch_dir = warehouse / "_staging" / batch_id
    decode.run(spark, batch_dir)
    normalize.run(spark, batch_dir)
    ddl.run(spark, batch_dir, buckets=BUCKETS)
    truncate.run(spark, batch_dir, buckets=BUCKETS)
    return batch_dir


# --------------------------------------------------------------------------- processes


def spark_submit(
    args: list[str], warehouse: Path, scratch: Path, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """``spark_jobs/compact.py`` under spark-submit, as the DAG runs it, in its own process group.

    The JVM flags only shorten start-up (C1 JIT, serial GC); ``spark.local.dir`` keeps the scratch files of
    killed JVMs (no shutdown hook removes them) in the test's folder.
    """
    jars = ",".join(Settings.from_env().jars())
    scratch.mkdir(parents=True, exist_ok=True)
    command = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master",
        "local[2]",
        "--jars",
        jars,
        "--driver-java-options",
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.log.level=WARN",
        "--conf",
        f"spark.local.dir={scratch}",
        str(REPO / "spark_jobs" / "compact.py"),
        "--warehouse",
        str(warehouse),
        *args,
    ]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("CDCLAKE_FAULT", "CDCLAKE_PAUSE"))}
    full_env.update(PYSPARK_PYTHON=sys.executable, CDCLAKE_SPARK_LOG_LEVEL="WARN", **(env or {}))
    full_env["CDCLAKE_FAULT_LOG"] = str(scratch / "faults.log")
    with open(scratch / "stdout", "w") as stdout, open(scratch / "stderr", "w") as stderr:
        return subprocess.Popen(command, cwd=REPO, env=full_env, stdout=stdout, stderr=stderr, start_new_session=True)


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    faults: str = ""  # what ``cdclake.runtime.faults.crash`` logged

    @property
    def output(self) -> str:
        """Both streams: under spark-submit the Python driver's stderr goes to the JVM's stdout."""
        return self.stdout + self.stderr


def finish(proc: subprocess.Popen, scratch: Path, timeout: float = SUBPROCESS_TIMEOUT_S) -> Finished:
    """Wait for the job, then kill whatever it left in its process group (Python workers of a killed JVM)."""
    try:
        proc.wait(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    log = scratch / "faults.log"
    return Finished(
        proc.returncode,
        (scratch / "stdout").read_text(),
        (scratch / "stderr").read_text(),
        log.read_text() if log.exists() else "",
    )


def compact(
    batch_dir: Path, warehouse: Path, scratch: Path, tables: list[str] = (), env: dict[str, str] | None = None
) -> Finished:
    args = ["--batch-dir", str(batch_dir)] + [a for t in tables for a in ("--table", t)]
    return finish(spark_submit(args, warehouse, scratch, env), scratch)


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------- table state


def spark_rows(spark, table: str) -> list[tuple[Any, ...]]:
    name = spark_table_name(table)
    spark.catalog.refreshTable(name)  # the session caches tables: other processes committed since
    return sorted((r["id"], r["v"]) for r in spark.table(name).select("id", "v").collect())


def lake_rows(warehouse: Path, table: str) -> list[tuple[Any, ...]]:
    return [(r["id"], r["v"]) for r in read_rows(warehouse, table)]


def path_of(uri: str) -> Path:
    return Path(urlsplit(uri).path)


@dataclass
class TableState:
    """What a reader sees of a table, and what lies in its folder."""

    snapshot_id: int | None
    log_snapshot_id: int | None
    rows: list[tuple[Any, ...]]
    metadata_location: str
    live_files: set[Path]
    unreferenced_data: set[Path] = field(default_factory=set)
    unreferenced_metadata: set[Path] = field(default_factory=set)


def table_state(warehouse: Path, table: str) -> TableState:
    tbl = load_table(warehouse, table)
    log = load_table(warehouse, table + "__changes")
    live = {path_of(p) for p in tbl.inspect.files().column("file_path").to_pylist()}
    ever = {path_of(p) for p in tbl.inspect.all_files().column("file_path").to_pylist()}
    root = path_of(tbl.location())
    on_disk = {p for p in (root / "data").rglob("*.parquet")}
    known_metadata = {path_of(e.metadata_file) for e in tbl.metadata.metadata_log} | {path_of(tbl.metadata_location)}
    return TableState(
        snapshot_id=tbl.current_snapshot().snapshot_id if tbl.current_snapshot() else None,
        log_snapshot_id=log.current_snapshot().snapshot_id if log.current_snapshot() else None,
        rows=lake_rows(warehouse, table),
        metadata_location=tbl.metadata_location,
        live_files=live,
        unreferenced_data=on_disk - ever,
        unreferenced_metadata=set((root / "metadata").glob("*.metadata.json")) - known_metadata,
    )


def catalog_pointer(warehouse: Path, table: str) -> str:
    """The metadata location the SQLite catalog row holds (what every reader opens)."""
    ns, name = spark_table_name(table).split(".")[1:]
    with sqlite3.connect(warehouse / "catalog.db") as conn:
        (location,) = conn.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_namespace=? AND table_name=?", (ns, name)
        ).fetchone()
    return location


def batch_commits(warehouse: Path, table: str, batch_id: str) -> int:
    return sum(1 for s in snapshot_summaries(warehouse, table) if s.get(BATCH_PROPERTY) == batch_id)


# --------------------------------------------------------------------------- the compact crash cases


@dataclass
class Lake:
    warehouse: Path
    batch_dir: Path
    before: dict[str, TableState]
    race_batches: tuple[Path, Path]
    race_key: int
    scratch: Path
    crashes: dict[str, tuple[Finished, TableState]] = field(default_factory=dict)
    retry: Finished | None = None

    def crash(self, point: str) -> tuple[Finished, TableState]:
        """Run the compact job of the point's table with the fault armed, once; the state it left."""
        if point not in self.crashes:
            table = table_of(point)
            done = compact(
                self.batch_dir,
                self.warehouse,
                self.scratch / point.replace(":", "_"),
                [table],
                {"CDCLAKE_FAULT": FAULT_OF.get(point, point)},
            )
            self.crashes[point] = (done, table_state(self.warehouse, table))
        return self.crashes[point]


@pytest.fixture(scope="module")
def lake(spark, warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """One applied batch for every case's table, then a second batch staged up to (not including) compact."""
    src = tmp_path_factory.mktemp("crash-input")
    tables = [table_of(p) for p in COMPACT_POINTS]
    scd2 = [table_of(p) for p in SCD2_POINTS]
    first = write(src / "first.json", [line for t in [*tables, RACE] for line in first_batch(t)])
    report = apply_files("goldengate-json", Options({"keys": "id"}), [str(first)], warehouse, spark=spark, scd2=scd2)
    assert report["balanced"] and report["applied"] == 6 * (len(tables) + 1), report
    for point in MERGE_POINTS:  # small tables take the overwrite path unless told otherwise
        spark.sql(
            f"ALTER TABLE {spark_table_name(table_of(point))} SET TBLPROPERTIES ('cdclake.mor-min-bucket-rows'='0')"
        )
    second = write(src / "second.json", [line for t in tables for line in second_batch(t)])
    batch_dir = prepare(spark, warehouse, second, scd2)
    # the race: both batches change key 1; the first also inserts a key of key 1's bucket that the second never
    # touches, so a second commit computed from the table before the first would silently drop it
    bucket = bucket_of(key_of({"id": 1}, ["id"]), BUCKETS)
    race_key = next(k for k in range(100, 10_000) if bucket_of(key_of({"id": k}, ["id"]), BUCKETS) == bucket)
    race_a = write(
        src / "race_a.json",
        [
            gg(RACE, "U", 30, before={"id": 1}, after={"id": 1, "v": "r-a"}),
            gg(RACE, "D", 31, before={"id": 2}),
            gg(RACE, "I", 32, after={"id": race_key, "v": "r-a"}),
        ],
    )
    race_b = write(
        src / "race_b.json",
        [
            gg(RACE, "U", 40, before={"id": 1}, after={"id": 1, "v": "r-b"}),
            gg(RACE, "I", 41, after={"id": 2, "v": "r-b"}),
            gg(RACE, "I", 42, after={"id": 9, "v": "r-b"}),
        ],
    )
    races = (prepare(spark, warehouse, race_a), prepare(spark, warehouse, race_b))
    before = {t: table_state(warehouse, t) for t in tables}
    return Lake(warehouse, batch_dir, before, races, race_key, tmp_path_factory.mktemp("crash-jobs"))


@pytest.fixture(scope="module")
def retried(lake: Lake) -> Lake:
    """Every point crashed, then one compact run of the whole batch (the task's retry)."""
    for point in COMPACT_POINTS:
        lake.crash(point)
    lake.retry = compact(lake.batch_dir, lake.warehouse, lake.scratch / "retry")
    assert lake.retry.returncode == 0, tail(lake.retry.output)
    return lake


@pytest.mark.parametrize("point", COMPACT_POINTS)
def test_a_killed_compaction_leaves_the_previous_snapshot(spark, lake: Lake, point: str) -> None:
    done, after = lake.crash(point)
    table = table_of(point)
    fault = FAULT_OF.get(point, point)
    assert done.returncode == -signal.SIGKILL, tail(done.output)
    assert done.faults.endswith(f" killed at {fault}\n"), done.faults
    before = lake.before[table]
    batch_id = lake.batch_dir.name
    if point in COMMITTED_POINTS:
        assert after.rows == AFTER
        assert batch_commits(lake.warehouse, table, batch_id) == 1
    elif point in MERGE_POINTS:
        # main still at its previous snapshot with its rows; the unpublished merge is on no branch of main
        assert (after.snapshot_id, after.rows) == (before.snapshot_id, BEFORE)
        assert batch_commits(lake.warehouse, table, batch_id) == 0
    else:
        # the table equals its previous snapshot: same snapshot, same metadata, same rows
        assert (after.snapshot_id, after.metadata_location, after.rows) == (
            before.snapshot_id,
            before.metadata_location,
            BEFORE,
        )
        assert catalog_pointer(lake.warehouse, table) == before.metadata_location
        assert batch_commits(lake.warehouse, table, batch_id) == 0
    # the change log is appended once, by the first commit, or not at all
    logged = batch_commits(lake.warehouse, table + "__changes", batch_id)
    assert logged == (0 if point == "compact:before-log-append" else 1)
    # nothing of the dead attempt is visible: both readers agree, every live file exists
    assert spark_rows(spark, table) == after.rows
    assert all(p.is_file() for p in after.live_files)
    new_orphans = after.unreferenced_data - before.unreferenced_data
    if point in ORPHAN_POINTS:
        # the kill came after the write's data files were complete: they exist, referenced by no snapshot
        assert new_orphans and not (new_orphans & after.live_files)
    else:
        assert not new_orphans
    if point == "compact:during-commit":
        # the commit had written its new table metadata; the catalog still points at the old one
        assert after.unreferenced_metadata - before.unreferenced_metadata


@pytest.mark.parametrize("point", COMPACT_POINTS)
def test_the_retry_converges(spark, retried: Lake, point: str) -> None:
    table = table_of(point)
    batch_id = retried.batch_dir.name
    assert lake_rows(retried.warehouse, table) == AFTER
    assert spark_rows(spark, table) == AFTER
    state = table_state(retried.warehouse, table)
    assert all(p.is_file() for p in state.live_files)
    assert batch_commits(retried.warehouse, table, batch_id) == 1  # never committed twice
    assert batch_commits(retried.warehouse, table + "__changes", batch_id) == 1
    log = [r for r in read_rows(retried.warehouse, table + "__changes", include_meta=True)]
    offsets = [(r["source_offset"], r["_role"]) for r in log if r["_cdc_batch"] == batch_id]
    assert len(offsets) == len(set(offsets)) and len({o for o, _ in offsets}) == SECOND_LOGGED
    if point in SCD2_POINTS:
        history = read_rows(retried.warehouse, table + "__history", include_meta=True)
        assert sorted((r["id"], r["v"]) for r in history if r["is_current"]) == AFTER
        assert batch_commits(retried.warehouse, table + "__history", batch_id) == 1


def test_the_retried_batch_report_is_balanced(retried: Lake) -> None:
    report = build_report(retried.batch_dir)
    assert report["balanced"], report
    for point in COMPACT_POINTS:
        entry = report["tables"][table_of(point)]
        assert (entry["applied"], entry["stale"], entry["quarantined"]) == SECOND_COUNTS, (point, entry)
    assert report["tables"][table_of("compact:after-commit")]["status"] == "already-committed"
    assert report["tables"][table_of("merge:after-commit")]["status"] == "already-committed"
    merged = report["tables"][table_of("merge:during-commit")]
    assert merged["merge_mode"] == "merge-on-read" and merged["files_removed"] == 0, merged
    assert report["applied"] == SECOND_COUNTS[0] * len(COMPACT_POINTS)


# --------------------------------------------------------------------------- two compactions at once


def test_two_compactions_of_one_table_at_once(spark, lake: Lake) -> None:
    """Both jobs read the table, fold and stop before their commits; one commits, then the other: its
    commit must fail Iceberg's validation (files added to its buckets since its read) and be redone."""
    scratch = {name: lake.scratch / f"race_{name}" for name in ("a", "b")}
    pause = {name: folder / "paused" for name, folder in scratch.items()}
    procs = {
        name: spark_submit(
            ["--batch-dir", str(batch_dir), "--table", RACE],
            lake.warehouse,
            scratch[name],
            {"CDCLAKE_PAUSE": "compact:before-commit", "CDCLAKE_PAUSE_FILE": str(pause[name])},
        )
        for name, batch_dir in zip(("a", "b"), lake.race_batches, strict=True)
    }
    try:
        deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S
        while not all(p.exists() for p in pause.values()):
            assert time.monotonic() < deadline, "the jobs never reached their commits"
            for name, proc in procs.items():
                assert proc.poll() is None, tail((scratch[name] / "stdout").read_text())
            time.sleep(0.2)
        pause["a"].unlink()
        a = finish(procs["a"], scratch["a"])
        assert a.returncode == 0, tail(a.output)
        pause["b"].unlink()
        b = finish(procs["b"], scratch["b"])
        assert b.returncode == 0, tail(b.output)
    finally:
        for proc in procs.values():
            if proc.poll() is None:  # a failed assertion above: do not leave a paused JVM behind
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert "another commit changed its buckets" in b.output, tail(b.output)
    log = read_rows(lake.warehouse, RACE + "__changes", include_meta=True)
    buckets = {r["_key"]: r["_cdc_bucket"] for r in log}
    assert buckets["[1]"] == buckets[f"[{lake.race_key}]"]  # the race really is on one bucket
    expected = sorted([(1, "r-b"), (2, "r-b"), (9, "r-b"), (lake.race_key, "r-a"), *BEFORE[2:]])
    assert lake_rows(lake.warehouse, RACE) == expected
    assert spark_rows(spark, RACE) == expected
    for batch_dir in lake.race_batches:
        assert batch_commits(lake.warehouse, RACE, batch_dir.name) == 1
        assert build_report(batch_dir)["balanced"]


# --------------------------------------------------------------------------- staging


STAGE = """
import sys
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_source

landing, root, batch_id = sys.argv[1:4]
manifest = stage_source(landing, root, Manifest(source="src", batch_id=batch_id, format="goldengate-json", options={}))
print(len(manifest.files))
"""


def stage(landing: Path, root: Path, batch_id: str, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CDCLAKE_FAULT", "CDCLAKE_PAUSE"))}
    if fault:
        env["CDCLAKE_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-c", STAGE, str(landing), str(root), batch_id],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def landing_files(folder: Path, count: int = 5) -> dict[str, str]:
    folder.mkdir(parents=True)
    out = {}
    for i in range(count):
        path = folder / f"part-{i}.json"
        path.write_text(gg("CRASH.STAGE", "I", i, after={"id": i}) + "\n")
        out[path.name] = sha256_of(path)
    return out


def staged(root: Path, batch_id: str) -> dict[str, str]:
    """Name -> sha256 of a batch's manifest, checked against its staged copies."""
    manifest = read_manifest(root / batch_id)
    names = [f.name for f in manifest.files]
    assert len(names) == len(set(names)), names
    for f in manifest.files:
        assert hashlib.sha256(read_staged_raw(f.path)).hexdigest() == f.sha256
    return {f.name: f.sha256 for f in manifest.files}


STAGE_POINTS = ["stage:after-claim", "stage:after-copy", "stage:before-manifest"]


@pytest.mark.parametrize("point", STAGE_POINTS)
def test_a_killed_staging_is_completed_by_its_retry(tmp_path: Path, point: str) -> None:
    files = landing_files(tmp_path / "landing")
    root = tmp_path / "staging"
    dead = stage(tmp_path / "landing", root, "b1", point)
    assert dead.returncode == -signal.SIGKILL, dead.stderr
    assert f"killing the process at {point}" in dead.stderr
    # where it died: claims only / one copy not yet recorded / every copy recorded; never a manifest
    with sqlite3.connect(root / "ledger.db") as conn:
        recorded = conn.execute("SELECT count(*) FROM claims WHERE batch_id='b1' AND sha256 IS NOT NULL").fetchone()
    copies = [p for p in (root / "b1" / "files").glob("*")] if (root / "b1" / "files").exists() else []
    assert (len(copies), recorded[0]) == {"stage:after-claim": (0, 0), "stage:after-copy": (1, 0)}.get(point, (5, 5))
    assert not (root / "b1" / "manifest.json").exists()
    retry = stage(tmp_path / "landing", root, "b1")
    assert retry.returncode == 0, retry.stderr
    assert staged(root, "b1") == files  # every file once, none missing, same bytes
    with sqlite3.connect(root / "ledger.db") as conn:
        rows = conn.execute("SELECT name, batch_id, sha256 FROM claims").fetchall()
    assert sorted(rows) == sorted((n, "b1", s) for n, s in files.items())
    assert not list((root / "b1" / "files").glob(".*.staging"))  # no temp file left behind


def test_plain_copies_of_a_batch_killed_before_compressed_copies_are_kept_by_its_retry(tmp_path: Path) -> None:
    """A batch whose copies were recorded by a version that wrote plain copies, killed before its manifest, is
    completed from those copies after an upgrade, even with its landing files gone."""
    files = landing_files(tmp_path / "landing")
    root = tmp_path / "staging"
    assert stage(tmp_path / "landing", root, "b1", "stage:before-manifest").returncode == -signal.SIGKILL
    for copy in (root / "b1" / "files").glob("*" + STAGED_SUFFIX):  # as the earlier version left them
        copy.with_name(copy.name.removesuffix(STAGED_SUFFIX)).write_bytes(read_staged_raw(copy))
        copy.unlink()
    for name in files:
        (tmp_path / "landing" / name).unlink()
    assert stage(tmp_path / "landing", root, "b1").returncode == 0
    assert staged(root, "b1") == files
    assert {Path(f.path).name for f in read_manifest(root / "b1").files} == set(files)


def test_a_killed_staging_batch_taken_over_by_the_next_run_is_not_staged_twice(tmp_path: Path) -> None:
    """The next run takes over the dead batch's claims; the dead batch's late retry then stages nothing."""
    files = landing_files(tmp_path / "landing")
    root = tmp_path / "staging"
    assert stage(tmp_path / "landing", root, "b1", "stage:after-copy").returncode == -signal.SIGKILL
    assert stage(tmp_path / "landing", root, "b2").returncode == 0
    assert stage(tmp_path / "landing", root, "b1").returncode == 0
    first, second = staged(root, "b1"), staged(root, "b2")
    assert not set(first) & set(second)
    assert {**first, **second} == files
