"""Whole-database jobs: showing, exporting and importing sessions, the axio migration, and
maintenance (stats, prune, recompress, vacuum, backup)."""
