"""The harness catches what it claims to: a hang, a crash, runaway memory, a forbidden side effect.

Decoders that misbehave on purpose are registered for the duration of one test only (the
registry is global, and the matrix test compares it with the corpus)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cdclake import registry
from cdclake.events.change import ChangeEvent, Rejected

from ._runner import Crash, Hang, decode_in_child


@contextmanager
def misbehaving(name: str, behave) -> Iterator[str]:
    format_id = f"hostile-selftest-{name}"

    class Misbehaving(registry.Decoder):
        def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
            behave(data)
            yield from ()

    registry.register(format_id)(Misbehaving)
    try:
        yield format_id
    finally:
        registry._REGISTRY.pop(format_id, None)


@pytest.fixture
def landing(tmp_path: Path) -> str:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x")
    return str(path)


def test_a_hang_is_killed(landing: str) -> None:
    def spin(_: bytes) -> None:
        while True:
            pass

    with misbehaving("hang", spin) as format_id, pytest.raises(Hang):
        decode_in_child(format_id, {}, [landing], deadline=1)


def test_a_crash_is_reported(landing: str) -> None:
    # SIGKILL stands for a crash in C code (a segfault) without leaving a core file behind
    with (
        misbehaving("crash", lambda _: os.kill(os.getpid(), signal.SIGKILL)) as format_id,
        pytest.raises(Crash, match="signal"),
    ):
        decode_in_child(format_id, {}, [landing], deadline=30)


def test_memory_growth_and_the_backstop(landing: str) -> None:
    kept = []
    with misbehaving("grow", lambda _: kept.append(bytearray(300 * 1024**2))) as format_id:
        outcome = decode_in_child(format_id, {}, [landing], deadline=30)
    assert outcome.error is None and outcome.memory_growth >= 250 * 1024**2
    with misbehaving("runaway", lambda _: bytearray(64 * 1024**3)) as format_id:
        outcome = decode_in_child(format_id, {}, [landing], deadline=30)
    assert outcome.error is not None and "MemoryError" in outcome.error


def test_an_exception_escaping_decode_is_reported(landing: str) -> None:
    with misbehaving("raise", lambda _: 1 / 0) as format_id:
        outcome = decode_in_child(format_id, {}, [landing], deadline=30)
    assert outcome.error is not None and "ZeroDivisionError" in outcome.error


def test_side_effects_are_audited(landing: str, tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("secret")

    def snoop(_: bytes) -> None:
        canary.read_text()
        __import__("pickle").loads(__import__("pickle").dumps(ChangeEvent))

    with misbehaving("snoop", snoop) as format_id:
        outcome = decode_in_child(format_id, {}, [landing], deadline=30, watched=(str(canary),))
    assert any(a.startswith("opened") for a in outcome.audit)
    assert any(a.startswith("pickle.find_class") for a in outcome.audit)
