"""Seekable zstd files (staged copies): any byte range reads back exactly, standard zstd tools read the file,
and a file that does not add up is refused with its name and what is wrong."""

from __future__ import annotations

import io
import random
import re
import struct
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.staging import seekable_zstd
from cdclake.staging.reading import STAGED_SUFFIX, read_staged_bytes, read_staged_raw, staged_size


def written(path: Path, chunks: list[bytes], workers: int = 1) -> Path:
    with open(path, "wb") as out:
        seekable_zstd.write(chunks, out, workers)
    return path


def sample(size: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    words = [b'{"op":"u","after":{"id":', b"}}\n", b'"name":"', b"\\u00e9", bytes(range(256))]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + str(rng.randrange(10**6)).encode()
    return bytes(out[:size])


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(0, 3 * seekable_zstd.FRAME_BYTES + 7),
    chunk=st.integers(1, 2 * seekable_zstd.FRAME_BYTES),
    reads=st.lists(st.tuples(st.floats(0, 1), st.integers(-1, 2 * seekable_zstd.FRAME_BYTES)), max_size=6),
)
def test_any_range_reads_back_the_bytes_written(tmp_path_factory, size: int, chunk: int, reads) -> None:
    data = sample(size)
    path = written(tmp_path_factory.mktemp("z") / "f.zst", [data[i : i + chunk] for i in range(0, size, chunk)])
    with seekable_zstd.Reader(path) as reader:
        assert reader.size == size
        for at, n in reads:
            start = int(at * size)
            assert reader.seek(start) == start
            got = reader.read(n)
            assert got == (data[start:] if n < 0 else data[start : start + n])
            assert reader.tell() == start + len(got)
        reader.seek(0)
        assert reader.read() == data


def test_the_size_and_hash_are_the_contents_and_threads_write_the_same_file(tmp_path: Path) -> None:
    import hashlib

    data = sample(5 * seekable_zstd.FRAME_BYTES + 123)
    one, two = tmp_path / "one.zst", tmp_path / "two.zst"
    with open(one, "wb") as out:
        assert seekable_zstd.write([data], out, 1) == (len(data), hashlib.sha256(data).hexdigest())
    written(two, [data[i : i + 70_000] for i in range(0, len(data), 70_000)], workers=3)
    assert one.read_bytes() == two.read_bytes()
    assert one.stat().st_size * 3 < len(data)


def test_standard_zstd_reads_the_file_and_skips_its_seek_table(tmp_path: Path) -> None:
    data = sample(2 * seekable_zstd.FRAME_BYTES + 5)
    path = written(tmp_path / "f.zst", [data])
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes()), read_across_frames=True)
    assert reader.read() == data
    # the seek table as the specification lays it out: skippable frame, 3 entries, footer
    raw = path.read_bytes()
    frames, descriptor, magic = struct.unpack("<IBI", raw[-9:])
    assert (frames, descriptor, magic) == (3, 0, 0x8F92EAB1)
    assert struct.unpack("<II", raw[-9 - 3 * 8 - 8 : -9 - 3 * 8]) == (0x184D2A5E, 3 * 8 + 9)


def test_an_empty_file_has_no_frames(tmp_path: Path) -> None:
    path = written(tmp_path / ("e" + STAGED_SUFFIX), [])
    assert staged_size(path) == 0 and read_staged_bytes(path) == b""


def test_a_staged_copy_of_a_gzip_file_reads_as_its_content_and_as_it_landed(tmp_path: Path) -> None:
    import gzip

    landed = gzip.compress(b'{"a":1}\n' * 1000)
    path = written(tmp_path / ("g.json.gz" + STAGED_SUFFIX), [landed])
    assert read_staged_raw(path) == landed
    assert read_staged_bytes(path) == b'{"a":1}\n' * 1000
    assert staged_size(path) == len(landed)


def _broken(raw: bytes, how: str) -> bytes:
    if how == "truncated":
        return raw[:-5]
    if how == "no table":
        return raw[:-40]
    if how == "frame flipped":
        broken = bytearray(raw)
        broken[200] ^= 0xFF
        return bytes(broken)
    if how == "more frames listed":
        return raw[:-9] + struct.pack("<IBI", 10**6, 0, 0x8F92EAB1)
    if how == "frame size lied":  # the first frame's header claims 4 GiB: refused before zstd allocates it
        assert raw[4] == 0x84 and struct.unpack("<I", raw[6:10]) == (seekable_zstd.FRAME_BYTES,)  # 4-byte size
        return raw[:6] + struct.pack("<I", 0xFFFFFFFF) + raw[10:]
    if how == "frames do not add up":
        return raw[:10] + raw  # bytes in front of the first frame
    raise AssertionError(how)


BROKEN = ["truncated", "no table", "frame flipped", "frame size lied", "more frames listed", "frames do not add up"]


@pytest.mark.parametrize("how", BROKEN)
def test_a_file_that_does_not_add_up_is_refused_with_its_name(tmp_path: Path, how: str) -> None:
    good = written(tmp_path / "good.zst", [sample(2 * seekable_zstd.FRAME_BYTES)])
    bad = tmp_path / ("bad" + STAGED_SUFFIX)
    bad.write_bytes(_broken(good.read_bytes(), how))
    with pytest.raises(OSError, match=re.escape("bad" + STAGED_SUFFIX)) as caught:
        read_staged_bytes(bad)
    assert isinstance(caught.value, seekable_zstd.SeekableError)


def test_a_plain_file_without_the_suffix_reads_as_it_is(tmp_path: Path) -> None:
    plain = tmp_path / "old-batch-copy.json"
    plain.write_bytes(b'{"a":1}\n')
    assert read_staged_raw(plain) == b'{"a":1}\n' and staged_size(plain) == 8
