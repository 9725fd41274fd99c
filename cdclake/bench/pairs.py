"""Ours against the naive job, run in pairs: the warm-until-steady rule and the figures of the timed pairs.

Pure functions (no Spark, no clock), so the rules are unit-tested on sequences of times.

Why: the naive job's timed runs kept falling run after run (1M GoldenGate JSON, 2026-12-02: 20.7, 15.5,
13.5 s against ours 14.5, 15.3, 15.4 s) after a warm-up on a small sample, so a median of three timed runs
compared ours with the slow end of the naive job's warm-up. Now both sides are warmed on the real input, in
turn, an equal number of times, until each side's runs stop falling (or a cap); then the timed runs
alternate (ours, naive, ours, naive ...). The headline is the best-of-N ratio (each side's fastest timed
run over the other's: the steady state with the least interference from a shared machine), stated with
the median of the pair ratios beside it; the medians of each side are kept too.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from typing import Any

#: A run that is more than this much faster than the one before means the side is still warming up.
STEADY_TOLERANCE = 0.05
#: At most this many warm-up runs per side (at least two: the rule compares a run with the one before). 8, not 5:
#: at 1M GoldenGate JSON the naive job was still falling after 5 (27.6, 18.2, 15.8, 15.2, 14.1 s); with 8 both
#: sides were steady after 4 (benchmarks/results/2026-12-07-bench-1m-gg-steady*.md).
WARM_UP_CAP = 8


def stopped_falling(times: Sequence[float], tolerance: float = STEADY_TOLERANCE) -> bool:
    """Whether the last run is no more than ``tolerance`` faster than the one before (False under two runs)."""
    return len(times) >= 2 and times[-1] >= times[-2] * (1 - tolerance)


def still_falling(times: Sequence[float], tolerance: float = STEADY_TOLERANCE) -> bool:
    """Whether every run is more than ``tolerance`` faster than the one before it (at least two runs): timed
    runs that do this were not steady, whatever the warm-up concluded."""
    return len(times) >= 2 and all(b < a * (1 - tolerance) for a, b in itertools.pairwise(times))


def keep_warming(
    ours: Sequence[float],
    naive: Sequence[float],
    cap: int = WARM_UP_CAP,
    tolerance: float = STEADY_TOLERANCE,
) -> bool:
    """Whether to run another warm-up pair, given each side's warm-up times so far (``ours`` empty: the naive
    job alone). Another pair until both sides have stopped falling, and never more than ``cap`` per side."""
    if len(naive) >= max(2, cap):
        return False
    return not (stopped_falling(naive, tolerance) and (not ours or stopped_falling(ours, tolerance)))


def warm_until_steady(
    run_pair: Callable[[int], tuple[float | None, float]],
    cap: int = WARM_UP_CAP,
    tolerance: float = STEADY_TOLERANCE,
) -> dict[str, Any]:
    """Run warm-up pairs (``run_pair(i)`` -> (ours s or None, naive s)) while :func:`keep_warming`.

    Both sides get the same number of warm-ups. Returns each side's warm-up times, whether each had stopped
    falling when the warm-up ended (False: it ended at the cap), and the rule's settings."""
    ours: list[float] = []
    naive: list[float] = []
    while keep_warming(ours, naive, cap, tolerance):
        ours_s, naive_s = run_pair(len(naive))
        if ours_s is not None:
            ours.append(ours_s)
        naive.append(naive_s)
    return {
        "ours_s": ours,
        "naive_s": naive,
        "ours_steady": stopped_falling(ours, tolerance) if ours else None,
        "naive_steady": stopped_falling(naive, tolerance),
        "cap": max(2, cap),
        "tolerance": tolerance,
    }


def pair_summary(ours: Sequence[float], naive: Sequence[float]) -> dict[str, Any]:
    """Every timed pair (ours, naive, ours ÷ naive), each side's best and median, and the ratios: best-of-N
    (best ÷ best, the headline), the median of the pair ratios, and the medians' ratio. ``ours`` may be empty
    (the pipeline step skipped): the naive side's figures alone, every ratio None."""
    if ours and len(ours) != len(naive):
        raise ValueError(f"{len(ours)} runs of ours against {len(naive)} of the naive job")
    pairs = [
        {"ours_s": o, "naive_s": n, "ratio": o / n} if ours else {"ours_s": None, "naive_s": n, "ratio": None}
        for o, n in zip(ours or [None] * len(naive), naive, strict=True)
    ]
    out: dict[str, Any] = {
        "runs": len(naive),
        "pairs": pairs,
        "naive_best_s": min(naive) if naive else None,
        "naive_median_s": statistics.median(naive) if naive else None,
        "ours_best_s": None,
        "ours_median_s": None,
        "best_ratio": None,
        "pair_ratio_median": None,
        "median_ratio": None,
    }
    if ours and naive:
        out |= {
            "ours_best_s": min(ours),
            "ours_median_s": statistics.median(ours),
            "best_ratio": min(ours) / min(naive),
            "pair_ratio_median": statistics.median(p["ratio"] for p in pairs),
            "median_ratio": statistics.median(ours) / statistics.median(naive),
        }
    return out


def _s(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def pairs_text(fmt: str, summary: dict[str, Any], warm: dict[str, Any] | None = None) -> list[str]:
    """The printed table of one format's pairs (the bench's log): warm-ups, every timed pair, best-of, medians."""
    lines = []
    if warm:
        lines.append(
            f"{fmt}: warm-ups (untimed): ours {len(warm['ours_s'])} ({', '.join(_s(t) for t in warm['ours_s'])} s), "
            f"naive {len(warm['naive_s'])} ({', '.join(_s(t) for t in warm['naive_s'])} s); "
            f"stopped falling: ours {warm['ours_steady']}, naive {warm['naive_steady']}"
        )
    lines.append(f"{fmt}: {'run':>8} {'ours s':>8} {'naive s':>8} {'ours÷naive':>11}")
    for i, p in enumerate(summary["pairs"], 1):
        lines.append(f"{fmt}: {i:>8} {_s(p['ours_s']):>8} {_s(p['naive_s']):>8} {_s(p['ratio'], 2):>11}")
    lines.append(
        f"{fmt}: {'best':>8} {_s(summary['ours_best_s']):>8} {_s(summary['naive_best_s']):>8} "
        f"{_s(summary['best_ratio'], 2):>11}  <- best-of-{summary['runs']} ratio (headline)"
    )
    lines.append(
        f"{fmt}: {'median':>8} {_s(summary['ours_median_s']):>8} {_s(summary['naive_median_s']):>8} "
        f"{_s(summary['median_ratio'], 2):>11}  (medians' ratio); median of the pair ratios "
        f"{_s(summary['pair_ratio_median'], 2)}"
    )
    return lines
