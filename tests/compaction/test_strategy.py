"""The mode choice's shortcut from the head snapshot's totals (no file-list query)."""

from __future__ import annotations

import pytest

from cdclake.compaction.strategy import MERGE_ON_READ, MOR_MIN_BUCKET_ROWS, OVERWRITE, choose_mode


class NoSpark:
    """Fails the test if the file list is queried."""

    def sql(self, text: str):
        raise AssertionError(f"queried: {text}")


def summary(data: int, deletes: int, records: int, deleted: int = 0) -> dict[str, str]:
    return {
        "total-data-files": str(data),
        "total-delete-files": str(deletes),
        "total-records": str(records),
        "total-position-deletes": str(deleted),
    }


def test_a_small_table_with_few_files_is_overwritten_without_a_query():
    touched = [1, 5, 9]
    got = choose_mode(NoSpark(), "t", {}, touched, 16, summary(16, 0, MOR_MIN_BUCKET_ROWS * 3 - 1))
    assert got == (OVERWRITE, touched)


def test_a_batch_touching_every_bucket_of_a_big_table_merges_without_a_query():
    every = list(range(16))
    totals = summary(32, 16, MOR_MIN_BUCKET_ROWS * 16 + 500, deleted=500)
    assert choose_mode(NoSpark(), "t", {}, every, 16, totals) == (MERGE_ON_READ, every)


@pytest.mark.parametrize(
    ("totals", "touched"),
    [
        (summary(16, 0, MOR_MIN_BUCKET_ROWS * 3), [1, 5, 9]),  # enough rows in all, but in these buckets?
        (summary(60, 5, 10), [1, 5, 9]),  # more files than the maintenance limit (4 x 16): which buckets
        (summary(32, 16, MOR_MIN_BUCKET_ROWS * 16, deleted=1), list(range(16))),  # one live row short
        ({"total-data-files": "3"}, [1, 5, 9]),  # a summary without the totals
    ],
)
def test_undecided_totals_query_the_file_list(totals, touched):
    with pytest.raises(AssertionError, match="queried"):
        choose_mode(NoSpark(), "t", {}, touched, 16, totals)
