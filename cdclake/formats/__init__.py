"""One module per vendor format; importing this package registers them all."""

try:
    from cdclake.formats import goldengate_json  # noqa: F401
except ImportError:
    from cdclake.formats import _scratch  # noqa: F401
