"""Command line (DESIGN.md section 3, a contract).

- ``python -m cdclake decode --format ID [--option K=V ...] FILE...``: events as
  JSON lines on stdout, rejected records as JSON lines on stderr; exit 0 when
  every record decoded, 1 when some were rejected, 2 on bad usage.
- ``python -m cdclake apply --format ID [--option K=V ...] --warehouse DIR FILE...``
- ``python -m cdclake show --warehouse DIR TABLE [--meta]``
- ``python -m cdclake replay --warehouse DIR (--batch-dir DIR | --source-dir DIR) [--option K=V ...]
  [--key TABLE=COL,COL ...] [--dry-run]``: re-process quarantined records after a fix
  (``cdclake.replay``); exit 1 when some records are still quarantined or not replayable.
- ``python -m cdclake rebuild --warehouse DIR --source-dir DIR [--table T ...] --from changelog|archive
  [--dry-run]``: rebuild a source's lake tables (``cdclake.jobs.rebuild``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cdclake.events.change import Rejected, to_json
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder
from cdclake.staging.reading import LandingFileError, read_landing_bytes

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep the message short
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m cdclake", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    dec = sub.add_parser("decode", help="decode landing files to canonical events (JSON lines)")
    dec.add_argument("--format", required=True, help="format id, e.g. goldengate-json")
    dec.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    dec.add_argument("files", nargs="+", metavar="FILE")

    app = sub.add_parser("apply", help="decode, normalize and merge files into Iceberg tables")
    app.add_argument("--format", required=True)
    app.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    app.add_argument("--warehouse", required=True, metavar="DIR")
    app.add_argument("--batch-id", default=None, help="batch id (default: derived from the files)")
    app.add_argument("--namespace", default=None, help="Iceberg namespace for every table (default: from the name)")
    app.add_argument(
        "--scd2",
        action="append",
        default=[],
        metavar="TABLE",
        help="keep SCD type 2 history for TABLE (repeatable; * for all) in <table>__history",
    )
    app.add_argument("files", nargs="+", metavar="FILE")

    show = sub.add_parser("show", help="print a table's current rows as JSON lines")
    show.add_argument("--warehouse", required=True, metavar="DIR")
    show.add_argument("--meta", action="store_true", help="include the _cdc_* columns")
    show.add_argument("--namespace", default=None, help="the namespace given to apply, if any")
    show.add_argument("table", metavar="TABLE", help="the source's table name, e.g. GG.TCUSTORD")
    ret = sub.add_parser("retention", help="expire tombstones older than the retention from a table's change log")
    ret.add_argument("--warehouse", required=True, metavar="DIR")
    ret.add_argument("--days", type=float, default=None, help="default: table property or 30")
    ret.add_argument("--namespace", default=None)
    ret.add_argument("table", metavar="TABLE")

    rep = sub.add_parser("replay", help="re-process a batch's quarantined records after a fix")
    rep.add_argument("--warehouse", required=True, metavar="DIR")
    where = rep.add_mutually_exclusive_group(required=True)
    where.add_argument("--batch-dir", metavar="DIR", help="one staged batch: <staging>/<source>/<batch_id>")
    where.add_argument("--source-dir", metavar="DIR", help="every staged batch of a source: <staging>/<source>")
    rep.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="decoder option override")
    rep.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="TABLE=COL[,COL]",
        help="primary key of a source table (repeatable; * for every table)",
    )
    rep.add_argument("--dry-run", action="store_true", help="only say what would be replayed")

    reb = sub.add_parser("rebuild", help="rebuild a source's lake tables from their change log or the raw archive")
    reb.add_argument("--warehouse", required=True, metavar="DIR")
    reb.add_argument("--source-dir", required=True, metavar="DIR", help="the source's staging folder")
    reb.add_argument("--table", action="append", default=[], metavar="TABLE", help="source table (default: all)")
    reb.add_argument("--from", dest="mode", required=True, choices=("changelog", "archive"))
    reb.add_argument("--run-id", default=None, help="folder of the rebuild report (default: a UTC timestamp)")
    reb.add_argument("--dry-run", action="store_true", help="only list the tables and batches")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "decode":
            return _decode(args)
        if args.command == "apply":
            return _apply(args)
        if args.command == "retention":
            return _retention(args)
        if args.command == "replay":
            return _replay(args)
        if args.command == "rebuild":
            return _rebuild(args)
        return _show(args)
    except OptionError as exc:
        sys.stderr.write(f"python -m cdclake {args.command}: error: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `... | head`: the reader left, not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _decode(args: argparse.Namespace) -> int:
    decoder = get_decoder(args.format, Options.parse(args.option))
    rejected = 0
    out, err = sys.stdout, sys.stderr
    for path in args.files:
        try:
            data = read_landing_bytes(path)
        except FileNotFoundError:
            raise OptionError(f"no such file: {path}") from None
        except (LandingFileError, OSError) as exc:
            rejected += 1
            err.write(to_json({"error": str(exc), "source": {"file": path, "offset": 0}}) + "\n")
            continue
        for item in decoder.decode(data, path):
            if isinstance(item, Rejected):
                rejected += 1
                err.write(to_json(item.to_dict()) + "\n")
            else:
                out.write(to_json(item.to_dict()) + "\n")
    out.flush()
    return EXIT_REJECTED if rejected else EXIT_OK


def _apply(args: argparse.Namespace) -> int:
    from cdclake.local_apply import apply_files

    options = Options.parse(args.option)
    get_decoder(args.format, options)  # usage errors before Spark starts
    report = apply_files(
        args.format,
        options,
        args.files,
        args.warehouse,
        batch_id=args.batch_id,
        scd2=args.scd2,
        namespace=args.namespace,
    )
    sys.stdout.write(to_json(report) + "\n")
    return EXIT_REJECTED if report.get("quarantined") else EXIT_OK


def _retention(args: argparse.Namespace) -> int:
    from cdclake.jobs import retention
    from cdclake.lake.naming import spark_table_name
    from cdclake.runtime.settings import Settings
    from cdclake.runtime.spark import build_session

    spark = build_session("cdclake-retention", args.warehouse, master="local[*]", jars=Settings.from_env().jars())
    report = retention.run(spark, spark_table_name(args.table, args.namespace), days=args.days)
    sys.stdout.write(to_json(report) + "\n")
    return EXIT_OK


def _session(name: str, warehouse: str):
    from cdclake.runtime.settings import Settings
    from cdclake.runtime.spark import build_session

    return build_session(name, warehouse, master="local[*]", jars=Settings.from_env().jars())


def _keys(items: list[str]) -> dict[str, list[str]]:
    keys = {}
    for item in items:
        table, sep, cols = item.rpartition("=")
        columns = [c.strip() for c in cols.split(",") if c.strip()]
        if not sep or not table or not columns:
            raise OptionError(f"--key {item!r}: expected TABLE=COL[,COL] (TABLE may be *)")
        keys[table] = columns
    return keys


def _replay(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cdclake import replay
    from cdclake.runtime.settings import Settings

    options, keys = Options.parse(args.option).raw(), _keys(args.key)
    target = Path(args.batch_dir or args.source_dir)
    if not target.is_dir():
        raise OptionError(f"no such folder: {target}")
    if args.batch_dir and not (target / "manifest.json").exists():
        raise OptionError(f"{target} is not a staged batch (no manifest.json)")
    spark = None if args.dry_run else _session("cdclake-replay", args.warehouse)
    kwargs = {"options": options, "keys": keys, "buckets": Settings.from_env().buckets, "dry_run": args.dry_run}
    if args.batch_dir:
        results = [replay.replay_batch(spark, target, **kwargs)]
    else:
        results = replay.replay_source(spark, target, **kwargs)
    clean = True
    for result in results:
        sys.stdout.write(to_json(result) + "\n")
        report = result.get("report") or {}
        clean = clean and not result.get("not_replayable") and not report.get("quarantined")
        clean = clean and report.get("balanced", True) and result.get("status") != "not-replayable"
    return EXIT_OK if clean else EXIT_REJECTED


def _rebuild(args: argparse.Namespace) -> int:
    import datetime as dt
    import os

    from cdclake.jobs import rebuild
    from cdclake.runtime.settings import Settings

    if not os.path.isdir(args.source_dir):
        raise OptionError(f"no such folder: {args.source_dir}")
    run_id = args.run_id or dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    spark = None if args.dry_run else _session("cdclake-rebuild", args.warehouse)
    try:
        report = rebuild.run(
            spark,
            args.source_dir,
            args.table or None,
            args.mode,
            run_id,
            buckets=Settings.from_env().buckets,
            dry_run=args.dry_run,
        )
    except RuntimeError as exc:
        sys.stderr.write(f"python -m cdclake rebuild: error: {exc}\n")
        return EXIT_REJECTED
    sys.stdout.write(to_json(report) + "\n")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    from cdclake.lake.tables import TableNotFound, read_rows

    try:
        rows = read_rows(args.warehouse, args.table, include_meta=args.meta, namespace=args.namespace)
    except TableNotFound as exc:
        sys.stderr.write(f"python -m cdclake show: error: {exc}\n")
        return EXIT_USAGE
    for row in rows:
        sys.stdout.write(to_json(row) + "\n")
    return EXIT_OK
