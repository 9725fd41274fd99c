"""Timestamp text as an aware UTC datetime, shared by the GoldenGate and Kafka Connect readers.

Each format matches its own pattern (what it accepts differs: a date alone, ``:`` between date
and time, years past 9999); the patterns share their groups (year, month, day, hour, minute,
second, fraction, zone), and turning those groups into a datetime is done here once, so that
fractions (truncated to microseconds) and zone offsets are read alike everywhere.
"""

from __future__ import annotations

import datetime as dt
import re


def zone_offset(zone: str | None) -> dt.timezone:
    """``Z``, ``+05:30``, ``-0800``, ``+01`` as a timezone; none means UTC (ValueError past ±24 hours)."""
    if not zone or zone in "Zz":
        return dt.UTC
    digits = zone[1:].replace(":", "")
    delta = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
    return dt.timezone(delta if zone[0] == "+" else -delta)


def from_match(match: re.Match[str]) -> dt.datetime:
    """The aware datetime a timestamp pattern's eight groups spell (no time: midnight; no zone: UTC).

    ValueError when there is no such moment (month 13, an offset past 24 hours...).
    """
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    return dt.datetime(
        int(year),
        int(month),
        int(day),
        int(hour or 0),
        int(minute or 0),
        int(second or 0),
        int(fraction[:6].ljust(6, "0")) if fraction else 0,
        tzinfo=zone_offset(zone) if zone else dt.UTC,
    )
