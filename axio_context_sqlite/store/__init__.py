"""The store: the connection, the schema and its migrations, and every read and write of sessions
and messages (payload encoding, sealed chunks, the append path, forks, checkpoints, tokens)."""
