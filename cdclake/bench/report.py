"""The benchmark's results as markdown (``benchmarks/results/<date>-bench.md``).

Events/s always count logical changes (one update is one change even where the format
writes it as two records), so every format's figures compare. The headline ratio is the
decode job's throughput per core used over the bare-parse limit of one core.
"""

from __future__ import annotations

from typing import Any


def decode_ratio(entry: dict[str, Any]) -> float | None:
    """Decode job events/s per core used ÷ bare-parse events/s (one core)."""
    pipe, single = entry.get("pipeline"), entry.get("single_core")
    if not pipe or not single:
        return None
    return decode_eps(pipe) / cores_used(pipe) / single["bare_parse_eps"]


def cores_used(pipe: dict[str, Any]) -> int:
    return max(1, min(pipe.get("parallelism") or 2, pipe.get("decode_tasks") or 1))


def decode_eps(pipe: dict[str, Any]) -> float:
    return pipe["events"] / pipe["seconds"]["decode"]


def _n(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def _mib(memory: dict[str, dict[str, int]], key: str) -> int:
    return max((m.get(key, 0) for m in memory.values()), default=0)


def ratio_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| format | MB | decode ev/s (tasks) | bare parse ev/s, 1 core | **decode per core ÷ bare** "
        "| normalize ev/s | merge ev/s | end-to-end ev/s | end-to-end s | wrong rows |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for fmt, entry in sorted(results["formats"].items()):
        pipe, single = entry.get("pipeline"), entry.get("single_core") or {}
        if not pipe:
            continue
        s, n = pipe["seconds"], pipe["events"]
        ratio = decode_ratio(entry)
        lines.append(
            f"| {fmt} | {pipe['bytes'] / 1e6:,.0f} | {_n(n / s['decode'])} ({pipe.get('decode_tasks')}) "
            f"| {_n(single.get('bare_parse_eps'))} | **{_n(ratio and ratio * 100, 1)}%** "
            f"| {_n(n / s['normalize'])} | {_n(n / s['merge'])} | {_n(n / s['end_to_end'])} "
            f"| {_n(s['end_to_end'], 1)} | {pipe['correct']['wrong']} of {pipe['correct']['expected']:,} |"
        )
    return lines


def render(results: dict[str, Any]) -> str:
    from cdclake.bench.bareparse import PARSERS

    m, st = results["machine"], results["settings"]
    out = [
        f"# Benchmarks, {results['date']}",
        "",
        f"Command: `{results['command']}`",
        "",
        f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_gib')} GiB; {m.get('os')}; "
        f"Python {m.get('python')}, PySpark {m.get('pyspark')}, {m.get('iceberg')}, {m.get('java')}. "
        f"Spark local[*] ({st.get('parallelism', '?')} cores), shuffle partitions {st['shuffle_partitions']}, "
        f"{st['buckets']} key buckets. Load average before/after: "
        f"{_load(m.get('load_before'))} / {_load(m.get('load_after'))} (the machine is shared).",
        "",
        f"Data: {st['events']:,} changes per format (4 tables of 10-20 columns; op mix "
        f"{_mix(results.get('generation', {}).get('mix', {}))}), {st['file_events']:,} changes per landing file, "
        f"seed {st['seed']}. Generation took {_n(results.get('generation', {}).get('seconds'))} s. "
        f"JVM start-up {_n(results.get('jvm_start_s'), 1)} s and a warm-up batch {_n(results.get('warm_up_s'), 1)} s "
        "are not in any figure below. Each timed run (ours, and the naive job) starts after a `sync`, untimed: "
        "the write-back of the landing files the bench has just generated is not charged to the step that "
        "writes next.",
        "",
        "## Throughput and the bare-parse limit",
        "",
        "Events/s count logical changes. *decode per core ÷ bare*: the decode job's events/s divided by the cores "
        "it used (its tasks, at most the cores) and by the bare-parse limit (one core, parser per format: "
        + ", ".join(f"{f} {p}" for f, (p, _) in sorted(PARSERS.items()) if f in results["formats"])
        + "). End-to-end = stage + decode + normalize + merge (the DDL, truncate and compact jobs). "
        "Wrong rows: lake rows missing, extra or "
        "different from the stream's final state.",
        "",
        *ratio_table(results),
        "",
        "## One core, no Spark",
        "",
        f"Over a sample of about {st['sample_events']:,} changes per format: the bare parse, the decoder alone, "
        "the decode task's whole Python path (decoder, Arrow columns, Parquet file), against the decode job's "
        "events/s per core. *Output alone*: building the canonical events (fresh image dicts) and their Arrow "
        "columns and Parquet file, with no decoding at all; *ceiling* = bare parse + output alone, the most any "
        "Python decode task could reach, however fast its decoder.",
        "",
        "| format | bare parse ev/s | decoder alone ev/s | task path ev/s | output alone ev/s "
        "| decode job ev/s per core | decoder ÷ bare | **ceiling ÷ bare** | job per core ÷ task path |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for fmt, entry in sorted(results["formats"].items()):
        single, pipe = entry.get("single_core"), entry.get("pipeline")
        if not single:
            continue
        job = decode_eps(pipe) / cores_used(pipe) if pipe else None
        ceiling = single.get("ceiling_eps")
        out.append(
            f"| {fmt} | {_n(single['bare_parse_eps'])} | {_n(single['decoder_eps'])} | {_n(single['task_path_eps'])} "
            f"| {_n(single.get('output_eps'))} | {_n(job)} "
            f"| {single['decoder_eps'] / single['bare_parse_eps'] * 100:.0f}% "
            f"| **{_n(ceiling and ceiling / single['bare_parse_eps'] * 100)}%** "
            f"| {_n(job and job / single['task_path_eps'] * 100)}% |"
        )
    out += [
        "",
        "## Memory",
        "",
        "Peak RSS (MiB) over the format's steps, sampled every 0.1 s: the driver JVM, the Python driver (this "
        "benchmark's own process), the largest single Python worker and all Python workers together; "
        "the decode step's workers apart.",
        "",
        "| format | JVM | Python driver | largest worker | all workers | decode: largest worker |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for fmt, entry in sorted(results["formats"].items()):
        pipe = entry.get("pipeline")
        if not pipe:
            continue
        mem = pipe["memory"]
        out.append(
            f"| {fmt} | {_mib(mem, 'jvm_mib')} | {_mib(mem, 'python_driver_mib')} | {_mib(mem, 'worker_max_mib')} "
            f"| {_mib(mem, 'workers_total_mib')} | {mem.get('decode', {}).get('worker_max_mib', 0)} |"
        )
    if results.get("naive"):
        out += _naive_section(results["naive"])
    if results.get("merge_curve"):
        out += _section(
            "Incremental merge curve",
            "A table of N rows (seeded in bulk, see `cdclake/bench/merge_curve.py`), then batches of partial "
            "updates to random keys through the whole pipeline (goldengate-json). Files: data files the commit "
            "removed / added / the table's total.",
            "| table rows | batch | events | wall s | files removed / added / total | buckets rewritten |",
            "|--:|---|--:|--:|---|---|",
        )
        for r in results["merge_curve"]:
            if r.get("batch") == "check":
                out.append(
                    f"| {r['rows']:,} | check | | | {r['rows_after']:,} rows after the batches, "
                    f"{r['rows_with_lost_columns']} with lost columns | |"
                )
            elif r.get("skipped"):
                out.append(f"| {r['rows']:,} | {r['batch']} | {r['events']:,} | skipped (--merge-max-batch) | | |")
            else:
                out.append(
                    f"| {r['rows']:,} | {r['batch']} | {r['events']:,} | {r['seconds']} "
                    f"| {r['files_removed']} / {r['files_added']} / {r['files_total']} "
                    f"| {r['buckets_rewritten']} / {r['buckets']} |"
                )
    if results.get("history"):
        h = results["history"]
        out += _section(
            "1,000 partial updates, short and long history",
            f"Warm session, from landing file to committed table (stage, decode, normalize, compact): batches of "
            f"1,000 partial updates to random keys of a {h['rows']:,}-row table (goldengate-json), "
            f"{len(h['short_row-state_all_s'])} onto each table, the two tables' batches in turn. Short: the table's "
            "log holds its seed only. Long: the log also "
            f"holds {h['events_per_key']} events per key from {h['history_batches']:,} earlier commits "
            f"({h.get('log_rows', 0):,} rows in {h.get('log_files', 0):,} files). Log path: one batch with row "
            "state off (`CDCLAKE_ROW_STATE=0`), every key refolded from its change log.",
            "| history | wall s (median) | mean s | all runs s | last batch's fold |",
            "|---|--:|--:|---|---|",
        )
        out += [
            f"| {label} | {h[f'{case}_s']} | {h.get(f'{case}_mean_s', '')} "
            f"| {h[f'{case}_all_s']} | {h[f'{case}_fold']} |"
            for label, case in (
                ("short", "short_row-state"),
                ("long", "long_row-state"),
                ("long, log path", "long_log"),
            )
        ]
        out += ["", f"Long ÷ short: **{h['ratio']}** (medians); {h.get('mean_ratio', '-')} (means)."]
    if results.get("many_tables"):
        m = results["many_tables"]
        out += _section(
            "Tables per batch (one application)",
            "One warm Spark session, the local pipeline (`run_batch`): a batch of 5 inserts into each of N new "
            "tables (creates them), then a batch of 5 updates to each (steady state). Extra table = slope between "
            "the smallest and largest N.",
            "| tables | new-tables batch s | steady batch s | balanced |",
            "|--:|--:|--:|---|",
        )
        for r in m["runs"]:
            ok = r.get("create_balanced") and r.get("steady_balanced")
            out.append(f"| {r['tables']} | {r['create_s']} | {r['steady_s']} | {ok} |")
        out += [
            "",
            f"Each extra table: **{m['per_extra_table_steady_s']} s** in the steady state, "
            f"{m['per_extra_table_create_s']} s when the batch creates it.",
        ]
    for key, title in (("dag_run", "DAG runs"), ("dag_run_tables", "DAG runs over many tables")):
        if not results.get(key):
            continue
        d = results[key]
        tasks = sorted({t for r in d["runs"] for t in r["task_s"]})
        out += [
            "",
            f"## {title}: where the wall time goes",
            "",
            f"`airflow dags test cdc_<source>` (real spark-submit tasks, SparkSubmitOperator, `local[*]`): "
            f"{d['events_per_run']:,} changes over {d['tables']} tables per run; run 1 creates the tables, run 2 "
            "changes them (`apply_ddl` runs only when a batch carries schema changes). Seconds per task from "
            "Airflow's task start/end lines; "
            "*before first task* is the `airflow` process start and DAG parsing.",
            "",
            "| run | ok | wall s | before first task s | " + " | ".join(tasks) + " |",
            "|--:|---|--:|--:|" + "--:|" * len(tasks),
        ]
        for r in d["runs"]:
            cells = " | ".join(_n(r["task_s"].get(t), 1) if t in r["task_s"] else "–" for t in tasks)
            out.append(f"| {r['run']} | {r['ok']} | {r['wall_s']} | {r['before_first_task_s']} | {cells} |")
    if results.get("big_file"):
        out += [
            "",
            "## One large landing file",
            "",
            "| format | size | changes | decode s | ev/s | tasks (pieces) | largest worker MiB | all workers MiB "
            "| JVM MiB |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for b in results["big_file"]:
            mem = b["memory"]
            out.append(
                f"| {b['format']} | {b['bytes'] / 1024**3:.2f} GiB | {b['events']:,} | {b['seconds']:.1f} "
                f"| {_n(b['events'] / b['seconds'])} | {b['tasks']} ({b['pieces']}) | {mem['worker_max_mib']} "
                f"| {mem['workers_total_mib']} | {mem['jvm_mib']} |"
            )
    if results.get("profile"):
        p = results["profile"]
        out += [
            "",
            f"## Profile of the furthest format: {p['format']} ({p['ratio'] * 100:.1f}% of its bare-parse limit)",
            "",
            "cProfile of the decode task's Python path (one core, no Spark), by cumulative and by own time:",
            "",
            "```",
            p["text"],
            "```",
        ]
    return "\n".join(out) + "\n"


def _naive_summary(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's timed pairs and their figures; from its run lists when the results predate the pairs."""
    from cdclake.bench.pairs import pair_summary

    if "pairs" in entry:
        return entry
    naive = entry.get("naive_runs_s") or [entry["seconds"]]
    ours = entry.get("ours_runs_s") or ([entry["ours_s"]] if entry.get("ours_s") else [])
    return pair_summary(ours, naive)


def _naive_section(naive: dict[str, dict[str, Any]]) -> list[str]:
    """Ours against the naive job: per format the best-of-N ratio (the headline), the median of the pair ratios
    and the medians, then every format's warm-ups and every timed pair."""
    warmed = any("warm_ups" in e for e in naive.values())
    out = _section(
        "Naive baseline",
        "`spark.read.json`, `row_number()` over the key ordered by the source position, keep the last, drop "
        "deletes, overwrite each table. Rows are compared on the key and the columns whose JSON value is the "
        "plain value (the naive job decodes no Kafka Connect or epoch types); *wrong* = missing, extra or "
        "different from the stream's final state."
        + (
            " Both sides are first warmed up on the format's whole input, untimed for this comparison: a pair "
            "at a time (ours, then the naive job), the same number of runs each, until each side's last run is no "
            "more than the tolerance faster than the one before (at least two, at most the cap); ours' first "
            "warm-up is the pipeline step's run above. Then the timed runs alternate: ours, naive, ours, naive. "
            "**Headline: the best-of-N ratio** (ours' fastest timed run ÷ the naive job's fastest: each side's "
            "steady state with the least interference from the shared machine), with the median of the pair "
            "ratios beside it; the medians of each side as before."
            if warmed
            else ""
        ),
        "| format | timed pairs | ours best s | naive best s | **best-of-N ours ÷ naive** | median of pair ratios "
        "| ours median s | naive median s | medians' ratio | naive wrong rows | ours wrong rows "
        "| rows where ours ≠ naive | compared kinds |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    )
    details = []
    for fmt, entry in sorted(naive.items()):
        nv, ours = entry["naive_vs_expected"], entry.get("ours_vs_expected") or {}
        summary = _naive_summary(entry)
        wrong = max(entry.get("ours_runs_wrong") or [ours.get("wrong")], key=lambda n: n or 0)
        out.append(
            f"| {fmt} | {summary['runs']} | {_n(summary['ours_best_s'], 1)} | {_n(summary['naive_best_s'], 1)} "
            f"| **{_n(summary['best_ratio'], 2)}** | {_n(summary['pair_ratio_median'], 2)} "
            f"| {_n(summary['ours_median_s'], 1)} | {_n(summary['naive_median_s'], 1)} "
            f"| {_n(summary['median_ratio'], 2)} | {nv['wrong']:,} of {nv['expected']:,} | {_n(wrong)} "
            f"| {_n(entry.get('rows_differing_ours_vs_naive'))} | {', '.join(entry['compared_kinds'])} |"
        )
        details += ["", f"{fmt}:", ""]
        warm = entry.get("warm_ups")
        if warm:
            first = "; the first is the pipeline step's run" if warm["ours_s"] else ""
            details.append(
                f"- warm-ups (untimed), until each side's last run is at most {warm['tolerance'] * 100:.0f}% faster "
                f"than the one before, at most {warm['cap']}: ours {len(warm['ours_s'])} "
                f"({_seconds(warm['ours_s'])}{first}), the naive job "
                f"{len(warm['naive_s'])} ({_seconds(warm['naive_s'])}); stopped falling: ours "
                f"{_steady(warm['ours_steady'])}, the naive job {_steady(warm['naive_steady'])}"
            )
        elif "warm_up_s" in entry:
            details.append(
                f"- warm-up (untimed): the naive job once on 2,000 changes of the format, {entry['warm_up_s']:.1f} s"
            )
        if entry.get("naive_timed_still_falling"):
            details.append(
                "- **the naive job's timed runs still fell run after run**: not steady, so even the best-of "
                "ratio may flatter ours; rerun with a higher `--warm-up-cap` on a quieter machine"
            )
        if entry.get("ours_timed_still_falling"):
            details.append(
                "- **the timed runs of ours still fell run after run**: not steady, so the ratios may flatter the "
                "naive job; rerun with a higher `--warm-up-cap` on a quieter machine"
            )
        runs_wrong = entry.get("ours_runs_wrong")
        details += [
            "- every timed pair, in order"
            + (f" (wrong rows of ours per run: {runs_wrong})" if runs_wrong else "")
            + ":",
            "",
            "| pair | ours s | naive s | ours ÷ naive |",
            "|--:|--:|--:|--:|",
            *(
                f"| {i} | {_n(p['ours_s'], 1)} | {_n(p['naive_s'], 1)} | {_n(p['ratio'], 2)} |"
                for i, p in enumerate(summary["pairs"], 1)
            ),
            f"| best-of-{summary['runs']} | {_n(summary['ours_best_s'], 1)} | {_n(summary['naive_best_s'], 1)} "
            f"| **{_n(summary['best_ratio'], 2)}** |",
            f"| median | {_n(summary['ours_median_s'], 1)} | {_n(summary['naive_median_s'], 1)} "
            f"| {_n(summary['median_ratio'], 2)} (pair ratios: {_n(summary['pair_ratio_median'], 2)}) |",
        ]
    return out + details


def _seconds(times: list[float]) -> str:
    return ", ".join(f"{t:.1f}" for t in times) + " s" if times else "none"


def _steady(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "no (the cap)")


def _section(title: str, text: str, header: str, rule: str) -> list[str]:
    """The lines that open a report section: its title, what it measures, its table's header and rule."""
    return ["", f"## {title}", "", text, "", header, rule]


def _load(value: Any) -> str:
    return "—" if not value else " ".join(f"{v:.1f}" for v in value)


def _mix(mix: dict[str, int]) -> str:
    total = sum(mix.values()) or 1
    return ", ".join(f"{k.replace('_', ' ')} {v / total * 100:.0f}%" for k, v in mix.items())
