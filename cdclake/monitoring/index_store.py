"""Where the monitoring index lives: a local folder or ``s3://bucket/prefix`` (same few calls for both).

The index is a handful of small JSON documents per source (cdclake.monitoring.index). Whole-object
reads and writes are all it needs, which S3 does atomically, so the page works the same whether
the index sits next to a local staging tree or in a bucket the api-server reaches over the network.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

#: Parallel writes of one save (hundreds of table segments per batch on S3).
WRITE_THREADS = 16


class IndexStore(Protocol):
    def describe(self) -> str: ...

    def read(self, name: str) -> bytes | None: ...

    def write_many(self, documents: dict[str, bytes]) -> None: ...

    def folders(self) -> list[str]: ...


def _safe(name: str) -> str:
    parts = name.split("/")
    if not name or any(p in ("", ".", "..") for p in parts) or "\\" in name or "\x00" in name:
        raise ValueError(f"index document name {name!r} is not a plain relative name")
    return name


class LocalStore:
    """Documents as files; written to a temp name and renamed, so a reader never sees half a file."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def describe(self) -> str:
        return str(self.root)

    def read(self, name: str) -> bytes | None:
        try:
            return (self.root / _safe(name)).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def write_many(self, documents: dict[str, bytes]) -> None:
        for name, data in documents.items():
            path = self.root / _safe(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)

    def folders(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


class S3Store:
    """Documents as objects under a prefix (one PUT each: atomic for readers)."""

    def __init__(self, url: str, client: Any) -> None:
        parts = urlsplit(url)
        if not parts.netloc:
            raise ValueError(f"monitoring index {url!r} names no bucket (expected s3://bucket/prefix)")
        self.bucket, self.client = parts.netloc, client
        prefix = parts.path.strip("/")
        self.prefix = f"{prefix}/" if prefix else ""

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def read(self, name: str) -> bytes | None:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.prefix + _safe(name))
        except self.client.exceptions.NoSuchKey:
            return None
        return response["Body"].read()

    def write_many(self, documents: dict[str, bytes]) -> None:
        def put(item: tuple[str, bytes]) -> None:
            self.client.put_object(Bucket=self.bucket, Key=self.prefix + _safe(item[0]), Body=item[1])

        with ThreadPoolExecutor(max_workers=min(WRITE_THREADS, max(1, len(documents)))) as pool:
            list(pool.map(put, documents.items()))

    def folders(self) -> list[str]:
        names: list[str] = []
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(self.prefix) :].rstrip("/")
                if name and not name.startswith((".", "_")):
                    names.append(name)
        return sorted(names)


def open_store(location: str | Path, s3_client: Any = None, aws_conn_id: str | None = "aws_default") -> IndexStore:
    """The store at ``location``; for ``s3://`` the client comes from the Airflow connection or environment."""
    text = str(location)
    if text.startswith(("s3://", "s3a://")):
        if s3_client is None:
            from cdclake.staging.stage import s3_client_from_connection

            s3_client = s3_client_from_connection(aws_conn_id)
        return S3Store(text, s3_client)
    return LocalStore(Path(location))
