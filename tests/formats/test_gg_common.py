"""``ByteOffsets``: byte offsets of character positions, for every codec a landing file may use."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.formats._gg_common import ByteOffsets

_CODECS = ["utf-8", "latin-1", "cp1252", "shift_jis", "iso2022_jp", "utf-16-le", "gb18030"]
_PIECES = ["a", "{}", "\n", " x:1,", "é", "Ωμ", "日本", "€", "ü" * 3]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(_CODECS),
    st.lists(st.sampled_from(_PIECES), max_size=30),
    st.lists(st.integers(0, 200), max_size=12),
    st.integers(0, 3),
)
def test_byte_offsets_are_the_encoded_lengths_of_the_text_before(codec, pieces, cuts, base) -> None:
    """Each asked position (growing, some asked twice, some going back) maps to ``base`` + the bytes the text
    before it takes when encoded as one stream (a stateful codec's escapes included)."""
    text = "".join(p for p in pieces if _encodes(p, codec))
    offsets = ByteOffsets(text, codec, base, identity=False, escapes=False)
    for cut in [*sorted(c % (len(text) + 1) for c in cuts), len(text), 0, len(text)]:
        assert offsets.at(cut) == base + _stream_length(text, cut, codec)


def _encodes(piece: str, codec: str) -> bool:
    try:
        piece.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def _stream_length(text: str, cut: int, codec: str) -> int:
    """Bytes of ``text[:cut]`` written by one incremental encoder fed char by char (not flushed)."""
    import codecs

    encoder = codecs.getincrementalencoder(codec)()
    return sum(len(encoder.encode(c)) for c in text[:cut])
