"""The lake tables as the outside reads them.

Owns Iceberg identifiers from source names (`naming`), reading tables without a JVM (`tables`), and which
Parquet columns carry statistics (`parquet_stats`).
"""
