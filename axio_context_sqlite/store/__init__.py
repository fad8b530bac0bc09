"""The store: the connection, the schema and its migrations, and every read and write of sessions
and messages (payload encoding, sealed chunks, the append path, forks, checkpoints, tokens), plus
the jobs that are SQL through and through: the session catalog (resolve, show, rename, delete),
upkeep (stats, prune, vacuum), checking and quarantine, recompressing, inserting imported
sessions, and reading the axio peer's file."""
