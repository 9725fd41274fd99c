"""Decoders registered under their format id (DESIGN.md section 2).

A decoder is a class built from :class:`~cdclake.options.Options` whose
``decode(data, file)`` turns the bytes of one landing file into canonical
events and rejected records. It is pure Python so that it can be tested
without Spark; the Spark decode job only distributes it. One instance decodes
the files of one batch in order, so formats whose records depend on earlier
ones (schemas announced in a previous file) can keep that state.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from cdclake.events.change import ChangeEvent, Rejected
from cdclake.options import OptionError, Options

if TYPE_CHECKING:
    import pyarrow as pa


class Decoder:
    """Base class: subclasses set ``format_id``, ``option_names`` and ``decode``."""

    format_id: ClassVar[str]
    option_names: ClassVar[frozenset[str]] = frozenset()
    #: True when a record can depend on an earlier file (e.g. Qlik data messages need the
    #: metadata message announced before): the decode job then feeds all files of a batch, in
    #: order, to one decoder instance instead of spreading them over workers.
    stateful: ClassVar[bool] = False
    #: Attributes that records change as they are read (e.g. the layouts a metadata change is announced against):
    #: what :meth:`checkpoint` saves and :meth:`rollback` puts back.
    record_state: ClassVar[tuple[str, ...]] = ()
    #: True when each record decodes alone (no pairs or key records joined across records; what records leave
    #: behind is :attr:`record_state`): a columnar path may then hand a span it does not read to :meth:`decode`
    #: alone and go on after it (``formats.columnar.reference_window``).
    independent_records: ClassVar[bool] = False

    def __init__(self, options: Options) -> None:
        options.check_known(self.option_names, self.format_id)
        self.options = options
        self.keys = options.list("keys")
        self.table_override = options.str("table")
        self.schema_dir = options.str("schemaDir")

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        raise NotImplementedError

    def decode_columns(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected | pa.RecordBatch]:
        """:meth:`decode` through the format's columnar path where it has one (:func:`columnar_reader`, made for
        this call: the decode task keeps one reader per decoder instead, so its caches last the batch)."""
        reader = columnar_reader(self)
        return reader.read(data, file) if reader is not None else self.decode(data, file)

    def checkpoint(self) -> dict[str, Any]:
        """A copy of :attr:`record_state`, for :meth:`rollback`: a fast path that gives up halfway through a span
        hands the span to :meth:`decode` with the decoder as the span found it."""
        return {name: copy.deepcopy(getattr(self, name)) for name in self.record_state if hasattr(self, name)}

    def rollback(self, saved: dict[str, Any]) -> None:
        """Put back what :meth:`checkpoint` saved."""
        for name, value in saved.items():
            setattr(self, name, value)

    def between_records(self) -> bool:
        """False while the last record read waits for the next one (e.g. a Kafka key record for its value)."""
        return True

    def export_state(self) -> str | None:
        """What a stateful decoder learnt (e.g. schemas announced) as JSON text, for the next batch."""
        return None

    def import_state(self, state: str) -> None:
        """Take over what an earlier batch's decoder learnt (see :meth:`export_state`)."""


class ColumnarReader(Protocol):
    """A format's columnar path over one decoder (``formats.columnar.SpanReader``): runs of records in the
    format's usual shape come as one Arrow record batch each (``events.arrow.DECODED_FILE_SCHEMA``, offsets from
    the first byte of ``data``), exactly the rows the decoder's :meth:`~Decoder.decode` and the decode task's
    builder give for them; whatever it cannot decide, the decoder's own :meth:`~Decoder.decode` reads."""

    def read(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected | pa.RecordBatch]: ...


#: A columnar path's factory: None when the decoder's options put its records outside the path's shape.
ColumnarFactory = Callable[[Decoder], ColumnarReader | None]

_REGISTRY: dict[str, type[Decoder]] = {}
_COLUMNAR: dict[str, ColumnarFactory] = {}


def register(format_id: str) -> Callable[[type[Decoder]], type[Decoder]]:
    """Class decorator: make a decoder available under ``format_id``."""

    def wrap(cls: type[Decoder]) -> type[Decoder]:
        if format_id in _REGISTRY:
            raise ValueError(f"format {format_id} registered twice")
        cls.format_id = format_id
        _REGISTRY[format_id] = cls
        return cls

    return wrap


def register_columns(format_id: str) -> Callable[[ColumnarFactory], ColumnarFactory]:
    """Decorator: ``factory(decoder)`` makes the columnar path of the decoders of ``format_id``."""

    def wrap(factory: ColumnarFactory) -> ColumnarFactory:
        if format_id in _COLUMNAR:
            raise ValueError(f"columnar path of {format_id} registered twice")
        _COLUMNAR[format_id] = factory
        return factory

    return wrap


def columnar_reader(decoder: Decoder) -> ColumnarReader | None:
    """The columnar path of ``decoder``'s format over it (None: the format has none, or not for these options)."""
    _load_all()
    factory = _COLUMNAR.get(decoder.format_id)
    return factory(decoder) if factory is not None else None


def format_ids() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def get_decoder(format_id: str, options: Options | None = None) -> Decoder:
    """A new decoder for ``format_id``; unknown id or option -> :class:`OptionError`."""
    _load_all()
    try:
        cls = _REGISTRY[format_id]
    except KeyError:
        raise OptionError(f"unknown format {format_id!r}; known formats: {', '.join(sorted(_REGISTRY))}") from None
    return cls(options or Options())


def _load_all() -> None:
    import cdclake.formats  # noqa: F401  (registers every decoder on import)
