"""cdclake: CDC landing files from many replication products -> Apache Iceberg tables."""

from cdclake import _allocator

_allocator.configure()  # before any module of the package loads pyarrow or numpy

__version__ = "0.1.0"
