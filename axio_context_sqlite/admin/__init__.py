"""Whole-database jobs over the store, with no SQL of their own: exporting, importing, the axio
migration, safe output files and backup (files), and the ``Database`` methods that run them and
the store's own jobs (catalog, upkeep, checking, recompressing) on the worker thread (jobs)."""
