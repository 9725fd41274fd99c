"""Column values as JSON text and back: the fast paths write and read exactly what the JSON
module would (same text, same value, same Python type), for any value a decoder can produce."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import format_ts, from_json, image_from_text, image_to_text, meta_text, to_json, value_text

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.text(),
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3), max_leaves=8
)


def _same(a, b) -> bool:
    """Equal values of the same types, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Decimal):
        return str(a) == str(b)
    return a == b


@settings(max_examples=400, deadline=None)
@given(values)
def test_value_text_is_to_json_and_reads_back_as_the_json_module_reads_it(value):
    text = value_text(value)
    assert text == to_json(value)
    assert _same(from_json(text), json.loads(text, parse_float=Decimal))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), values, max_size=5))
def test_an_image_survives_its_text_form(image):
    back = image_from_text(image_to_text(image))
    assert _same(back, {k: json.loads(to_json(v), parse_float=Decimal) for k, v in image.items()})
    assert json.loads(meta_text(image), parse_float=Decimal) == json.loads(to_json(image), parse_float=Decimal)


def test_texts_that_only_look_like_the_fast_cases_go_to_the_json_module():
    for text, expected in [
        ('"a\\"b"', 'a"b'),
        ('"\\u00e9"', "é"),
        ("-0", 0),
        ("1E400", Decimal("1E+400")),
        ("0.10", Decimal("0.10")),
        ('" x "', " x "),
    ]:
        assert _same(from_json(text), expected), text
    for bad in ("01", "1.", ".5", "+1", '"a"b"', "nul", "1_000", "٣"):
        try:
            from_json(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} was accepted")


_ZONES = st.sampled_from(
    [
        None,
        dt.UTC,
        dt.timezone(dt.timedelta(0)),
        dt.timezone(dt.timedelta(hours=5, minutes=30)),
        dt.timezone(-dt.timedelta(hours=8)),
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)), _ZONES)
def test_a_timestamp_is_written_as_its_utc_instant_with_microseconds_and_z(moment, zone) -> None:
    value = moment.replace(tzinfo=zone)
    utc = value if zone is None else value.astimezone(dt.UTC).replace(tzinfo=None)
    assert format_ts(value) == utc.isoformat(timespec="microseconds") + "Z"  # the spelling before positional args
    assert dt.datetime.fromisoformat(format_ts(value)[:-1]) == utc
