"""axio-context-sqlite: the SQLite backend of axio-context (sessions, messages, search) and its CLI."""
