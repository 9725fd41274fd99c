"""The "truncated file" case: one good file cut at every kind of place, each cut decoded.

A file can be cut anywhere by a failed copy, so one cut point proves little. The sweep cuts a
file of good records at every record start, one byte either side of it, one byte either side of
the point where a record becomes complete, inside the header, and at evenly spaced points, and
decodes every cut (all in one child process, within one deadline). For each cut it asserts that
the records wholly before the cut decode, and that a record the cut falls inside is rejected
(exactly one rejection), or, for the few positions where the format cannot tell (a CSV line cut
inside its last field), that the record decodes as the format reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdclake.runtime.limits import MAX_RAW_BYTES

from ._runner import run_jobs

#: Evenly spaced cut points added to the structural ones.
SPREAD = 16
#: Deadline of the whole sweep (all cuts of one format).
SWEEP_SECONDS = 60.0


def sweep_truncations(
    format_id: str,
    records: list[bytes],
    tmp: Path,
    *,
    complete_at: Callable[[bytes], int],
    header: bytes = b"",
    ids: list[Any] | None = None,
    options: dict[str, str] | None = None,
    header_rejections: tuple[int, ...] = (1,),
    silent_from: Callable[[bytes], int] | None = None,
) -> None:
    """Cut ``header + records`` at many points and check each cut (see the module docstring).

    ``complete_at(record)``: the length of a prefix of the record from which it decodes whole;
    ``ids``: the id each record decodes to (None: a record that yields no row event); default
    1, 2, 3...; ``header_rejections``: rejection counts allowed for a cut inside the header;
    ``silent_from(record)``: where a cut starts to go unnoticed (the record decodes shortened).
    """
    ids = [None if i is None else str(i) for i in (ids if ids is not None else range(1, len(records) + 1))]
    data = header + b"".join(records)
    spans = []
    at = len(header)
    for record in records:
        spans.append((at, at + complete_at(record), at + (silent_from(record) if silent_from else len(record) + 1)))
        at += len(record)
    cuts = {0, len(header) // 2, len(header), len(data)}
    for start, complete, _ in spans:
        cuts.update({start - 1, start, start + 1, (start + complete) // 2, complete - 1, complete, complete + 1})
    cuts.update(len(data) * i // SPREAD for i in range(SPREAD))
    cuts = sorted(c for c in cuts if 0 <= c <= len(data))
    jobs = []
    for cut in cuts:
        path = tmp / f"cut-{cut:08d}.bin"
        path.write_bytes(data[:cut])
        jobs.append({"format": format_id, "options": options or {}, "paths": [str(path)]})
    outcomes = run_jobs(jobs, deadline=SWEEP_SECONDS)
    for cut, outcome in zip(cuts, outcomes, strict=True):
        label = f"{format_id} cut at byte {cut} of {len(data)}"
        assert outcome.error is None, f"{label}: decode() raised:\n{outcome.error}"
        got = [e.id for e in outcome.events]
        reasons = [r.error for r in outcome.rejected]
        for item in outcome.rejected:
            assert 0 <= item.offset <= cut and item.raw_len <= MAX_RAW_BYTES, f"{label}: bad rejection {item}"
        if 0 < cut < len(header):
            assert got == [] and len(reasons) in header_rejections, f"{label}: inside the header: {got} {reasons}"
            continue
        whole = [i for (_, complete, _), i in zip(spans, ids, strict=True) if complete <= cut and i is not None]
        inside = [k for k, (start, complete, _) in enumerate(spans) if start < cut < complete]
        if inside and spans[inside[0]][2] <= cut:  # a cut the format cannot notice: decodes shortened
            expected = whole + ([ids[inside[0]]] if ids[inside[0]] is not None else [])
            assert got == expected and not reasons, f"{label}: expected {expected} silently, got {got} {reasons}"
            continue
        assert got == whole, f"{label}: decoded {got}, expected the records before the cut {whole}; {reasons}"
        assert len(reasons) == len(inside), f"{label}: expected {len(inside)} rejection(s), got {reasons}"
