"""The change event and its representations.

Owns the canonical change event (`change`, DESIGN.md section 3, a contract), its Arrow form (`arrow`), a
batch's events in the driver (`batch`), the decode step's per-table files (`decoded`), and the Arrow helpers
those share (`arrow_tables`, `arrow_text`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

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

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
