"""Column types and schema changes.

Owns the lake's column types and casts (`coltypes`), the one model of a schema change (`changes`), DDL text
and announced column lists read into it (`ddl_text`, `events`), and the evolution rules (`evolution`).
"""
