"""cdclake: CDC landing files from many replication products -> Apache Iceberg tables."""

from cdclake.runtime.allocator import configure as _configure_allocator

_configure_allocator()  # before any module of the package loads pyarrow or numpy

__version__ = "0.1.0"
