"""Run decoders on hostile input in a forked child: bounded time, bounded memory, no crash escapes.

Why a forked child and not a thread: a decoder that hangs cannot be stopped from a thread, a
runaway allocation would take the test process (and the machine) with it, and a crash in C code
(fastavro's reader recursing on a recursive schema) kills the process. The child is forked from
the test process, which has already imported every decoder, so a case costs milliseconds, not a
new interpreter. The child:

- caps its address space (``RLIMIT_AS``: current size + :data:`HARD_LIMIT_BYTES`) so a runaway
  allocation fails inside the child with ``MemoryError`` instead of swapping the machine;
- reads each landing file as the decode job does (:func:`cdclake.staging.reading.read_landing_bytes`),
  then measures the peak resident set (``ru_maxrss``) before and after decoding: the growth is
  what the decoder itself allocated, compared with the case's memory budget by the caller;
- records audit events (PEP 578) that a hostile input must never cause: opening a watched path
  (the XXE canary), a network connection, unpickling, importing a Java deserializer;
- reports a compact summary of every item as JSON through a pipe (never pickle).

The parent kills the child when it outlives its deadline: that is a hang.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from cdclake.events.change import ChangeEvent, Rejected, to_json
from cdclake.options import Options
from cdclake.registry import get_decoder
from cdclake.staging.reading import LandingFileError, read_landing_bytes

#: Address space the child may add to what it had at fork time (a backstop, not the budget).
HARD_LIMIT_BYTES = 3 * 1024**3
#: An item's JSON text is kept up to this many characters in the summary.
MAX_ITEM_TEXT = 4000
#: Modules whose import during a decode would mean someone tried to deserialize Java or pickles.
FORBIDDEN_MODULES = ("pickle", "_pickle", "javaobj", "jpype", "py4j", "jnius")
_EVENT_HOOK_INSTALLED: list[bool] = []


@dataclass
class Item:
    """One decoded item as the parent sees it."""

    kind: str  # "event" or "rejected"
    file: str
    offset: int
    op: str | None = None
    table: str | None = None
    id: Any = None
    error: str | None = None
    raw_len: int = 0
    text: str = ""


@dataclass
class Outcome:
    """What happened in the child."""

    items: list[Item] = field(default_factory=list)
    seconds: float = 0.0
    memory_growth: int = 0
    #: Texts of ``forbidden`` found in some item (JSON, reason or raw bytes).
    leaks: list[str] = field(default_factory=list)
    #: Audit events that must not happen (watched path opened, socket, unpickling, forbidden import).
    audit: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def events(self) -> list[Item]:
        """Events that stand for records (``SCHEMA`` announcements are derived, not records)."""
        return [i for i in self.items if i.kind == "event" and i.op != "SCHEMA"]

    @property
    def rejected(self) -> list[Item]:
        return [i for i in self.items if i.kind == "rejected"]


class Hang(AssertionError):
    """The child outlived its deadline."""


class Crash(AssertionError):
    """The child died without reporting (a signal, or an exit before the report)."""


def decode_in_child(
    format_id: str,
    options: dict[str, str],
    paths: list[str],
    *,
    deadline: float,
    forbidden: tuple[str, ...] = (),
    watched: tuple[str, ...] = (),
) -> Outcome:
    """Decode ``paths`` in order with one decoder instance in a forked child (see the module docstring)."""
    jobs = [{"format": format_id, "options": options, "paths": paths}]
    return run_jobs(jobs, deadline=deadline, forbidden=forbidden, watched=watched)[0]


def run_jobs(
    jobs: list[dict[str, Any]],
    *,
    deadline: float,
    forbidden: tuple[str, ...] = (),
    watched: tuple[str, ...] = (),
) -> list[Outcome]:
    """Several decodes (each: format, options, paths) in one child; ``deadline`` covers them all."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        status = 0
        try:
            report = _child(jobs, forbidden, watched)
        except BaseException:
            report = {"fatal": traceback.format_exc()}
            status = 1
        try:
            payload = json.dumps(report).encode()
            view = memoryview(payload)
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(status)
    os.close(write_end)
    chunks, started = [], time.monotonic()
    try:
        while True:
            left = deadline - (time.monotonic() - started)
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise Hang(f"decoding did not finish within {deadline:.0f} s (killed)")
            ready, _, _ = select.select([read_end], [], [], left)
            if ready:
                chunk = os.read(read_end, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        raise Crash(f"the decoding process died of signal {os.WTERMSIG(status)}")
    if not chunks:
        raise Crash(f"the decoding process exited with status {os.waitstatus_to_exitcode(status)} without a report")
    report = json.loads(b"".join(chunks))
    if "fatal" in report:
        raise Crash(f"the decoding process failed:\n{report['fatal']}")
    return [_outcome(r) for r in report["outcomes"]]


def _outcome(report: dict[str, Any]) -> Outcome:
    outcome = Outcome(
        items=[Item(**i) for i in report["items"]],
        seconds=report["seconds"],
        memory_growth=report["memory_growth"],
        leaks=report["leaks"],
        audit=report["audit"],
        error=report["error"],
    )
    return outcome


# --- the child ------------------------------------------------------------------------------------


def _child(jobs: list[dict[str, Any]], forbidden: tuple[str, ...], watched: tuple[str, ...]) -> dict[str, Any]:
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space() + HARD_LIMIT_BYTES
    if hard == resource.RLIM_INFINITY or limit < hard:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    audit: list[str] = []
    recording = [False]
    watched_paths = {os.path.realpath(p) for p in watched}

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if not recording[0]:
            return
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.fsdecode(args[0])
            if os.path.realpath(path) in watched_paths:
                audit.append(f"opened {path}")
        elif event in ("socket.connect", "socket.getaddrinfo", "urllib.Request"):
            audit.append(f"{event} {args[:2]!r}")
        elif event == "pickle.find_class":  # any unpickling of an object
            audit.append(f"{event} {args[:2]!r}")
        elif event == "import" and args and str(args[0]).split(".")[0] in FORBIDDEN_MODULES:
            audit.append(f"import {args[0]}")

    sys.addaudithook(hook)
    outcomes = []
    for job in jobs:
        forbidden_bytes = [f.encode() for f in forbidden]
        items: list[dict[str, Any]] = []
        leaks: set[str] = set()
        audit.clear()
        error = None
        decoder = get_decoder(job["format"], Options(job["options"]))
        base = _peak_rss()
        start = time.monotonic()
        recording[0] = True
        try:
            for path in job["paths"]:
                name = os.path.basename(path)
                try:
                    data = read_landing_bytes(path)
                except LandingFileError as exc:
                    items.append({"kind": "rejected", "file": name, "offset": 0, "error": str(exc), "raw_len": 0})
                    continue
                if not items:  # the first file's bytes are input, not the decoder's growth
                    base = _peak_rss()
                for item in decoder.decode(data, name):
                    items.append(_summary(item, forbidden, forbidden_bytes, leaks))
                del data
        except MemoryError:
            error = "MemoryError: the decoder hit the address-space backstop"
        except Exception:
            error = traceback.format_exc()
        finally:
            recording[0] = False
        seconds = time.monotonic() - start
        outcomes.append(
            {
                "items": items,
                "seconds": seconds,
                "memory_growth": max(0, _peak_rss() - base),
                "leaks": sorted(leaks),
                "audit": list(audit),
                "error": error,
            }
        )
    return {"outcomes": outcomes}


def _summary(
    item: ChangeEvent | Rejected, forbidden: tuple[str, ...], forbidden_bytes: list[bytes], leaks: set[str]
) -> dict[str, Any]:
    if isinstance(item, Rejected):
        for text, raw in zip(forbidden, forbidden_bytes, strict=True):
            if text in item.error or raw in item.raw:
                leaks.add(text)
        return {
            "kind": "rejected",
            "file": item.source.file,
            "offset": item.source.offset,
            "error": item.error,
            "raw_len": len(item.raw),
        }
    text = to_json(item.to_dict())
    for secret in forbidden:
        if secret in text:
            leaks.add(secret)
    image = item.after if item.after is not None else item.before
    ident = None
    if isinstance(image, dict):
        ident = image.get("ID", image.get("id"))
    if ident is None and item.op not in ("INSERT", "UPDATE", "DELETE", "UPSERT"):
        ident = item.op
    return {
        "kind": "event",
        "file": item.source.file,
        "offset": item.source.offset,
        "op": item.op,
        "table": item.table,
        "id": None if ident is None else str(ident),  # text formats give "1", typed ones 1: compare as text
        "text": text[:MAX_ITEM_TEXT],
    }


def _peak_rss() -> int:
    """Peak resident set of this process in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _address_space() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * resource.getpagesize()
