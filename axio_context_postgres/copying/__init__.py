"""``axio-context copy`` is the core's (:mod:`axio_context.copying`, its layers written once in
:mod:`axio_context.copying.records_sql`); this package holds the PostgreSQL side of it
(:mod:`.sides`). ``copy_all`` is re-exported for those who imported it from here."""

from axio_context.copying import CopyAllReport, CopyReport, LayerReport, copy_all, copy_sessions

__all__ = ["CopyAllReport", "CopyReport", "LayerReport", "copy_all", "copy_sessions"]
