"""The mode choice's shortcut from the head snapshot's totals (no file-list query)."""

from __future__ import annotations

import pytest

from cdclake.compaction.strategy import MOR_MIN_BUCKET_ROWS, OVERWRITE, _choose_mode


class NoSpark:
    """Fails the test if the file list is queried."""

    def sql(self, text: str):
        raise AssertionError(f"queried: {text}")


def summary(data: int, deletes: int, records: int) -> dict[str, str]:
    return {"total-data-files": str(data), "total-delete-files": str(deletes), "total-records": str(records)}


def test_a_small_table_with_few_files_is_overwritten_without_a_query():
    touched = [1, 5, 9]
    got = _choose_mode(NoSpark(), "t", {}, touched, 16, summary(16, 0, MOR_MIN_BUCKET_ROWS * 3 - 1))
    assert got == (OVERWRITE, touched)


@pytest.mark.parametrize(
    "totals",
    [
        summary(16, 0, MOR_MIN_BUCKET_ROWS * 3),  # enough rows that a merge could pay
        summary(60, 5, 10),  # more files than the maintenance limit (4 x 16): which buckets needs the list
        {"total-data-files": "3"},  # a summary without the totals
    ],
)
def test_undecided_totals_query_the_file_list(totals):
    with pytest.raises(AssertionError, match="queried"):
        _choose_mode(NoSpark(), "t", {}, [1, 5, 9], 16, totals)
