"""The change event and its representations.

Owns the canonical change event (`change`, DESIGN.md section 3, a contract), its Arrow form (`arrow`), a
batch's events in the driver (`batch`), the decode step's per-table files (`decoded`), and the Arrow helpers
those share (`arrow_tables`, `arrow_text`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

import importlib

#: Modules of this package exported as themselves.
_MODULES = ("arrow_text", "batch")
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "arrow": ("DECODED_FILE_SCHEMA", "DecodedBuilder"),
    "arrow_tables": ("ChunkedTake",),
    "arrow_text": ("first_bytes", "holding", "replaced", "text_buckets", "text_buffers", "with_spelt"),
    "batch": (
        "SCHEMA_EVENT_COLUMNS",
        "ChangelogWriter",
        "DriverEvents",
        "TaskSurvey",
        "column_kinds",
        "decoded_bytes",
        "decoded_files",
        "decoded_rows",
        "event_chunks",
        "merged_column_kinds",
        "merged_op_summary",
        "merged_surveys",
        "op_summary",
        "read_ahead",
        "read_events",
    ),
    "change": (
        "EVENT_SCHEMA",
        "IMAGE_TYPE",
        "REJECT_SCHEMA",
        "ROW_OPS",
        "ChangeEvent",
        "Rejected",
        "Source",
        "event_to_row",
        "format_ts",
        "from_json",
        "image_from_text",
        "image_to_text",
        "joined_text",
        "meta_text",
        "rejected_to_row",
        "to_json",
        "value_text",
    ),
    "decoded": (
        "CHANGELOG_SCHEMA",
        "NULL_FOLDER_VALUE",
        "TableFilesWriter",
        "escape_table",
        "is_per_table",
        "publish_changelog",
        "unescape_table",
    ),
}
_HOME = {name: module for module, names in _NAMES.items() for name in names} | {m: m for m in _MODULES}

__all__ = [
    "CHANGELOG_SCHEMA",
    "DECODED_FILE_SCHEMA",
    "EVENT_SCHEMA",
    "IMAGE_TYPE",
    "NULL_FOLDER_VALUE",
    "REJECT_SCHEMA",
    "ROW_OPS",
    "SCHEMA_EVENT_COLUMNS",
    "ChangeEvent",
    "ChangelogWriter",
    "ChunkedTake",
    "DecodedBuilder",
    "DriverEvents",
    "Rejected",
    "Source",
    "TableFilesWriter",
    "TaskSurvey",
    "arrow_text",
    "batch",
    "column_kinds",
    "decoded_bytes",
    "decoded_files",
    "decoded_rows",
    "escape_table",
    "event_chunks",
    "event_to_row",
    "first_bytes",
    "format_ts",
    "from_json",
    "holding",
    "image_from_text",
    "image_to_text",
    "is_per_table",
    "joined_text",
    "merged_column_kinds",
    "merged_op_summary",
    "merged_surveys",
    "meta_text",
    "op_summary",
    "publish_changelog",
    "read_ahead",
    "read_events",
    "rejected_to_row",
    "replaced",
    "text_buckets",
    "text_buffers",
    "to_json",
    "unescape_table",
    "value_text",
    "with_spelt",
]


def __getattr__(name: str):  # -> Any (not annotated: the package imports nothing, not even ``typing``)
    """A name of :data:`__all__`, from its module, imported now if it was not yet."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(f"{__name__}.{module}")
    return loaded if module == name else getattr(loaded, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
