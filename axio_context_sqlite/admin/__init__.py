"""Whole-database jobs, one module each: sessions (resolve, show, fork, rm, rename, title),
exporting, importing, the axio migration, files (safe output files), maintenance (stats, prune,
vacuum, backup) and recompressing."""
