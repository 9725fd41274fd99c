"""The compiled helpers of the decode and merge paths, behind one public face: each helper here runs its C where the
package's optional extension modules are built (``_image_index``, ``_json_objects``, ``_text_forms``,
``_value_texts``: ``setup.py``'s ``ext_modules``, built in place by ``make setup``), else its Python equivalent.

Why: a span of Kafka Connect records cost decode about 40 us a record in Python, and splitting each image
object into Arrow columns of member names and value texts was the largest part left that needs no Python
object per value; the merge's routing judged every image value by a regular expression, a third of a bulk
compact step (docs/decisions.md, "Image objects split in C; ..." and "Value forms scanned in C").

- :mod:`~cdclake.native.text_forms`: which texts have a form (``number_forms``, ``quoted_forms``, ``iso_forms``,
  ``judge``), normalize's kinds (``kind_codes``), JSON shapes (``shape_bits``), key buckets (``crc32_buckets``);
- :mod:`~cdclake.native.value_texts`: texts spelt anew (``epoch_texts``, ``connect_decimals``) and a column
  with some texts replaced (``splice``);
- :mod:`~cdclake.native.json_objects`: image objects split (``split_objects``), brackets counted
  (``bracket_counts``);
- :mod:`~cdclake.native.image_index`: an image map's entries of a block of names (``first_entries``);
- :mod:`~cdclake.native.loader`: which C runs: ``CDCLAKE_NATIVE=0`` (read at import) turns it off, as does
  :func:`disabled` within a block (tests hold each path to the other); :func:`available` says whether a helper's C
  runs. A helper with no Python equivalent (``split_objects``, ``judge``: the callers then read another way)
  raises :class:`NotBuilt` where its C does not run;
- :mod:`~cdclake.native.build`: the in-place build of the C sources (``python -m cdclake.native.build``).

Each helper's Python path is held to its C by tests (``tests/native``); where a module is not built (no C
compiler, e.g. a slim image), that path runs and nothing else changes.

The names are exported here (``__all__``), each loaded from its module when first asked for (PEP 562): importing
the package alone loads none of its modules.
"""

from cdclake import lazy_exports

#: The public names, by the module of this package that defines them.
_NAMES = {
    "buffers": ("first_bytes", "text_buffers"),
    "image_index": ("first_entries",),
    "json_objects": ("bracket_counts", "split_objects"),
    "loader": ("NotBuilt", "available", "disabled"),
    "text_forms": (
        "ISO_DATE",
        "ISO_TIMESTAMP",
        "KIND_LONG_INTEGER",
        "SHAPE_BACKSLASH",
        "SHAPE_BOOLEAN",
        "SHAPE_INTEGER",
        "SHAPE_NULL",
        "SHAPE_NUMBER",
        "SHAPE_SPELT",
        "SHAPE_STRING",
        "crc32_buckets",
        "iso_forms",
        "judge",
        "kind_codes",
        "number_forms",
        "quoted_forms",
        "shape_bits",
    ),
    "value_texts": ("connect_decimals", "epoch_texts", "splice"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES)
