"""cdclake: CDC landing files from many replication products -> Apache Iceberg tables."""

__version__ = "0.1.0"
