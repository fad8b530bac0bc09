-- axio-context database schema: the one source of truth.
--
-- The file is the ordered list of migration steps, each a section starting with a
-- `-- version: N name` line. A new database runs every step in order; a database at version K
-- runs the steps after K. Each step runs in one transaction together with
-- `PRAGMA user_version = N`, so an upgrade is all or nothing. A `-- python: function` line in a
-- step runs that data step (axio_context_sqlite/store/schema.py, DATA_STEPS) at that point of the
-- step's transaction. Steps are append-only once released: change the schema by adding a step.
--
-- Our databases are marked with `PRAGMA application_id = 1096303444` (0x41584354, "AXCT"), so an
-- SQLite file of another application is recognised and refused, never changed.
--
-- Times are integer milliseconds since the Unix epoch (UTC).

-- version: 1 initial

-- One row per session. `sid` is the internal key; messages are keyed by (sid << 32) | position,
-- so one session's messages are one contiguous range of the messages table's b-tree.
CREATE TABLE sessions (
    sid            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,          -- the caller's session id
    project        TEXT,                          -- resolved project directory, or any label
    parent_id      TEXT,                          -- session this one was forked from (lineage, kept for display)
    fork_position  INTEGER,                       -- how many of the parent's messages it inherited
    base_sid       INTEGER,                       -- session whose rows hold positions [0, base_len)
    base_len       INTEGER NOT NULL DEFAULT 0,
    next_position  INTEGER NOT NULL DEFAULT 0,    -- length of the full transcript
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    preview        TEXT,                          -- first user text, cut to 80 chars; NULL until known
    preview_pos    INTEGER,                       -- position of the message the preview came from
    title          TEXT,
    metadata       TEXT,                          -- JSON object, free for applications
    input_tokens   INTEGER NOT NULL DEFAULT 0,    -- axio's token totals
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    est_tokens     INTEGER NOT NULL DEFAULT 0     -- estimated tokens of the full transcript
);
CREATE INDEX sessions_by_project ON sessions (project, created_at DESC, sid DESC);
CREATE INDEX sessions_by_created ON sessions (created_at DESC, sid DESC);
CREATE INDEX sessions_by_base ON sessions (base_sid) WHERE base_sid IS NOT NULL;
CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

-- One row per message, immutable once written. Role: 0 user, 1 assistant, 2 system.
-- payload: MessagePack of the content blocks; flags bit 0 = zlib-compressed, bit 1 = media
-- bytes replaced by their SHA-256 digest (the bytes live once in `blobs`).
CREATE TABLE messages (
    id          INTEGER PRIMARY KEY,
    role        INTEGER NOT NULL,
    flags       INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    tokens      INTEGER NOT NULL DEFAULT 0,       -- estimated tokens of this message
    payload     BLOB NOT NULL
);

-- Large media, stored once per database and shared by every message (and fork) that uses it.
CREATE TABLE blobs (
    hash  BLOB PRIMARY KEY,                       -- SHA-256 of data
    refs  INTEGER NOT NULL,                       -- messages referencing it; 0 -> deleted
    data  BLOB NOT NULL
);

-- Compaction checkpoints: `summary` (MessagePack list of messages) stands in for positions
-- [0, position) of the session's full transcript in the model's view.
-- `seq` numbers a session's checkpoints; a fork copies its parent's rows with their `seq`, so the
-- inherited ones keep their identity (copying costs the number of checkpoints, not messages).
CREATE TABLE checkpoints (
    id             INTEGER PRIMARY KEY,
    sid            INTEGER NOT NULL,
    seq            INTEGER NOT NULL,
    position       INTEGER NOT NULL,
    summary        BLOB NOT NULL,
    tokens_before  INTEGER NOT NULL DEFAULT 0,
    tokens_after   INTEGER NOT NULL DEFAULT 0,
    summarizer     TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    summary_tokens INTEGER NOT NULL DEFAULT 0,    -- estimated tokens of `summary`
    tokens_at      INTEGER NOT NULL DEFAULT 0     -- estimated tokens of positions [0, position)
);
CREATE UNIQUE INDEX checkpoints_by_session ON checkpoints (sid, seq);

-- Per-database settings (embedding model and dimension, and the like).
CREATE TABLE settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
) WITHOUT ROWID;

-- version: 2 search_indexes

-- Keyword search. FTS5 over each message's text in two columns, `body` (text people and the
-- model wrote) and `tool` (tool names, inputs and results), weighted 1 : 0.25 by bm25 so a
-- person's words rank above the same words in tool output. Contentless: the text is not stored
-- a second time (the payload is its copy), and a row is removed with FTS5's 'delete' command
-- fed the text re-extracted from the payload (plain `contentless_delete` would need SQLite
-- 3.43, newer than the 3.40 many Pythons ship). rowid = messages.id, so a fork's inherited
-- messages are indexed once, under the session that owns the rows.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    body, tool, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts (messages_fts, rank) VALUES ('rank', 'bm25(1.0, 0.25)');

-- Messages committed but not yet in messages_fts. FTS5 writes a new index segment for every
-- transaction that touches it (~100-200 us here, more than the rest of an append), so an
-- append records its message here, in its own transaction, and the queue is folded into the
-- index in one step before every keyword search (and by an append once it holds 1,024). A
-- search therefore always sees every committed message; a crash leaves the queue, never a
-- lost entry.
CREATE TABLE fts_pending (
    id  INTEGER PRIMARY KEY                       -- messages.id
);

-- Semantic search. One float32 embedding per message (id = messages.id); the embedder's model
-- and dimension are recorded once in `settings`. When sqlite-vec runs, a vec0 table
-- `message_codes` (created on first use, since its width depends on the dimension; see
-- axio_context_sqlite/indexing.py) holds binary codes for a fast coarse KNN re-scored exactly
-- from these vectors.
CREATE TABLE message_vectors (
    id         INTEGER PRIMARY KEY,
    embedding  BLOB NOT NULL
);

-- Messages stored before this version go into the keyword index now.
-- python: index_existing_text

-- version: 3 formatted_times

-- Listing times stored formatted. Formatting two times per row in SQL was over half the cost of
-- listing 2,000 sessions; STORED generated columns compute the ISO-8601 text once per write
-- (`ops.iso` gives the same text; the modulo arithmetic floors times before 1970 as it does) and
-- keep it right whatever statement changes the times.
-- SQLite cannot add a STORED column to a table, so the sessions table is rebuilt (its rows keep
-- their `sid`, which messages' keys are built from). Columns mean what version 1 says.
CREATE TABLE sessions_v3 (
    sid            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    project        TEXT,
    parent_id      TEXT,
    fork_position  INTEGER,
    base_sid       INTEGER,
    base_len       INTEGER NOT NULL DEFAULT 0,
    next_position  INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    preview        TEXT,
    preview_pos    INTEGER,
    title          TEXT,
    metadata       TEXT,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    est_tokens     INTEGER NOT NULL DEFAULT 0,
    created_iso    TEXT GENERATED ALWAYS AS (
        strftime('%Y-%m-%dT%H:%M:%S', (created_at - (created_at % 1000 + 1000) % 1000) / 1000, 'unixepoch')
        || printf('.%03d+00:00', (created_at % 1000 + 1000) % 1000)) STORED,
    updated_iso    TEXT GENERATED ALWAYS AS (
        strftime('%Y-%m-%dT%H:%M:%S', (updated_at - (updated_at % 1000 + 1000) % 1000) / 1000, 'unixepoch')
        || printf('.%03d+00:00', (updated_at % 1000 + 1000) % 1000)) STORED
);
INSERT INTO sessions_v3 (sid, id, project, parent_id, fork_position, base_sid, base_len, next_position,
        created_at, updated_at, preview, preview_pos, title, metadata, input_tokens, output_tokens,
        est_tokens)
    SELECT sid, id, project, parent_id, fork_position, base_sid, base_len, next_position,
        created_at, updated_at, preview, preview_pos, title, metadata, input_tokens, output_tokens,
        est_tokens
    FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_v3 RENAME TO sessions;
CREATE INDEX sessions_by_project ON sessions (project, created_at DESC, sid DESC);
CREATE INDEX sessions_by_created ON sessions (created_at DESC, sid DESC);
CREATE INDEX sessions_by_base ON sessions (base_sid) WHERE base_sid IS NOT NULL;
CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

-- version: 4 zstd_dictionaries

-- Zstandard dictionaries, trained from the database's own payloads (see
-- axio_context_sqlite/storage.py). A payload compressed with one says so in messages.flags
-- (flags >> 8 = id); a dictionary is kept while any payload may use it.
CREATE TABLE zstd_dicts (
    id          INTEGER PRIMARY KEY,
    data        BLOB NOT NULL,                    -- the dictionary, as zstd writes it
    samples     INTEGER NOT NULL,                 -- payloads it was trained on
    created_at  INTEGER NOT NULL
);

-- version: 5 sealed_chunks

-- Sealed chunks (see axio_context_sqlite/chunks.py): the payloads of 64 consecutive messages of
-- one session, positions [id & 0xffffffff, +64), as one compressed MessagePack array of
-- [role, media flag, content]. Their rows in `messages` keep everything else, with flags bit 3
-- set and an empty payload. id = the key of the block's first message.
CREATE TABLE chunks (
    id       INTEGER PRIMARY KEY,
    flags    INTEGER NOT NULL,                    -- compression, as messages.flags
    payload  BLOB NOT NULL
);

-- version: 6 application_id_and_session_id_limit

-- Mark the file as axio-context's (see the top of this file).
PRAGMA application_id = 1096303444;

-- A session id is at most 256 characters: one of a megabyte was accepted and padded every
-- listing. Ids already stored are kept as they are; new ones (created, forked, renamed,
-- imported) are checked here, whatever path writes them. The message is matched by
-- axio_context_sqlite/errors.py (translate_error) to raise SessionIdError.
-- (An upsert of an existing session runs BEFORE INSERT triggers too: those ids pass.)
CREATE TRIGGER sessions_id_limit_insert BEFORE INSERT ON sessions
    WHEN length(NEW.id) > 256 AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'axio-context: session id is longer than 256 characters');
END;
CREATE TRIGGER sessions_id_limit_update BEFORE UPDATE OF id ON sessions
    WHEN length(NEW.id) > 256
BEGIN
    SELECT RAISE(ABORT, 'axio-context: session id is longer than 256 characters');
END;

-- version: 7 quarantine

-- Rows that did not decode, moved aside by `axio-context check --quarantine` (see
-- axio_context_sqlite/admin/checking.py): each holds the stored bytes as they were and why they
-- were moved. The message's place in its session holds a placeholder saying so, so positions
-- stay dense and forks and checkpoints keep pointing where they did.
CREATE TABLE quarantine (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,                -- the session that stored the row
    position        INTEGER NOT NULL,             -- its position there (a chunk's: its first)
    count           INTEGER NOT NULL DEFAULT 1,   -- positions it covers (a sealed chunk: 64)
    kind            TEXT NOT NULL,                -- 'message' (a messages row) or 'chunk'
    row_id          INTEGER NOT NULL,             -- the messages.id or chunks.id it had
    role            INTEGER,
    flags           INTEGER NOT NULL,
    created_at      INTEGER,
    payload         BLOB NOT NULL,                -- the raw bytes, as stored
    reason          TEXT NOT NULL,
    quarantined_at  INTEGER NOT NULL
);

-- version: 8 memory_stores

-- Agent memory stores (see axio_context/memory and axio_context_sqlite/memory), beside the
-- sessions in the same file.

-- Vector collections: a collection's dimension and the embedder that made its vectors ('' when
-- not known) are fixed when it is created.
CREATE TABLE memory_collections (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    dimension   INTEGER NOT NULL,
    embedder    TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
);

-- One row per document. `code` is the binary code of its embedding (store/vec.py
-- `binary_code`) for the coarse pass of a search; small columns come first and the text last,
-- so that pass reads little beyond the codes and the metadata its filter looks at.
CREATE TABLE memory_documents (
    rowid       INTEGER PRIMARY KEY,
    collection  INTEGER NOT NULL,
    id          TEXT NOT NULL,
    code        BLOB NOT NULL,
    metadata    BLOB NOT NULL,                    -- JSONB object: filters read it without parsing text
    updated_at  INTEGER NOT NULL,
    content     TEXT NOT NULL,
    UNIQUE (collection, id)
);

-- The float32 embedding of each document (rowid = memory_documents.rowid), apart so the coarse
-- pass does not read it; only the candidates it keeps are re-scored from here.
CREATE TABLE memory_embeddings (
    rowid      INTEGER PRIMARY KEY,
    embedding  BLOB NOT NULL
);

-- Blob store keys. The bytes live once in `blobs` (shared with messages' media): each key
-- holds one reference (`blobs.refs`), as each message referencing the bytes does.
CREATE TABLE memory_blob_keys (
    key           TEXT PRIMARY KEY,
    hash          BLOB NOT NULL,                  -- blobs.hash
    size          INTEGER NOT NULL,
    content_type  TEXT NOT NULL,
    created_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX memory_blob_keys_by_hash ON memory_blob_keys (hash);

-- Bytes of blobs too large for one row, in 1 MiB pieces (seq 0, 1, ...); their `blobs` row
-- keeps an empty `data`. Written and read a piece at a time, so a 200 MB file is never held in
-- memory whole.
CREATE TABLE memory_blob_chunks (
    hash  BLOB NOT NULL,
    seq   INTEGER NOT NULL,
    data  BLOB NOT NULL,
    PRIMARY KEY (hash, seq)
) WITHOUT ROWID;

-- A blob whose last reference went (a message or a key) takes its pieces with it.
CREATE TRIGGER memory_blob_chunks_free AFTER DELETE ON blobs BEGIN
    DELETE FROM memory_blob_chunks WHERE hash = OLD.hash;
END;

-- A message that references bytes stored in pieces (a file uploaded first, then sent as an
-- image) gets them back in `blobs.data`, where messages read media: when a reference is added
-- that is not a key's (refs > keys holding the hash), the pieces are joined into `data` once
-- (group_concat keeps every byte of a BLOB) and dropped.
CREATE TRIGGER memory_blob_chunks_join AFTER UPDATE OF refs ON blobs
WHEN length(NEW.data) = 0
    AND NEW.refs > (SELECT COUNT(*) FROM memory_blob_keys WHERE hash = NEW.hash)
    AND EXISTS (SELECT 1 FROM memory_blob_chunks WHERE hash = NEW.hash)
BEGIN
    UPDATE blobs SET data = (
        SELECT CAST(group_concat(data, x'') AS BLOB)
        FROM (SELECT data FROM memory_blob_chunks WHERE hash = NEW.hash ORDER BY seq)
    ) WHERE hash = NEW.hash;
    DELETE FROM memory_blob_chunks WHERE hash = NEW.hash;
END;

-- Graph: entities and relationships; `get_neighbors` walks the two indexes below with a
-- recursive query.
CREATE TABLE graph_entities (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    properties  TEXT NOT NULL DEFAULT '{}'        -- JSON object
) WITHOUT ROWID;

CREATE TABLE graph_relationships (
    id          TEXT PRIMARY KEY,
    source      TEXT NOT NULL,                    -- graph_entities.id
    target      TEXT NOT NULL,                    -- graph_entities.id
    type        TEXT NOT NULL,
    properties  TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;
CREATE INDEX graph_relationships_by_source ON graph_relationships (source, type);
CREATE INDEX graph_relationships_by_target ON graph_relationships (target, type);

-- Task boards, one per (conversation_id, agent_id), and their tasks, one row each, so every
-- change is a conditional UPDATE of a row inside one write transaction (no lost update when
-- several processes share the file).
CREATE TABLE task_lists (
    id               TEXT PRIMARY KEY,
    conversation_id  TEXT NOT NULL,
    agent_id         TEXT NOT NULL DEFAULT '',
    agent_label      TEXT NOT NULL DEFAULT '',
    parent_agent_id  TEXT,
    max_retries      INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (conversation_id, agent_id)
) WITHOUT ROWID;

CREATE TABLE tasks (
    list_id      TEXT NOT NULL,                   -- task_lists.id
    id           TEXT NOT NULL,
    title        TEXT NOT NULL,
    status       TEXT NOT NULL,
    ord          INTEGER NOT NULL,
    retry_count  INTEGER NOT NULL DEFAULT 0,
    note         TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (list_id, id)
) WITHOUT ROWID;

-- version: 9 message_extras

-- A message's optional id, timestamp and metadata (MessagePack, see axio_context.codec
-- encode_extras), only for messages that have them: the payload and its bytes stay as they were,
-- and a message without them has no row here. id = the message's id; sealing a chunk keeps it.
CREATE TABLE message_extras (
    id    INTEGER PRIMARY KEY,
    data  BLOB NOT NULL
);

-- Provider blocks (items only their protocol reads) became searchable by their text: index
-- entries made before are replaced (a removal feeds the index the text it holds).
-- python: reindex_provider_text

-- version: 10 resumable_state

-- Subagent sessions: a subagent's history is a session of its own, owned by the session of the
-- agent that ran it. `owner_id` is that session's id and `agent_name` the subagent's key in the
-- agent's state (pai's `subagent_history` key). Ownership is not lineage: a subagent session
-- shares no messages with its owner (its `parent_id`/`base_sid` stay NULL), and a fork of either
-- one keeps lineage in `parent_id` as always. A session can be both: a fork of a subagent
-- session has `parent_id` set and no owner; deleting an owner leaves its subagent sessions
-- (nothing is lost), listed as roots.
ALTER TABLE sessions ADD COLUMN owner_id TEXT;
ALTER TABLE sessions ADD COLUMN agent_name TEXT;
CREATE UNIQUE INDEX sessions_by_owner ON sessions (owner_id, agent_name) WHERE owner_id IS NOT NULL;

-- An agent's resumable state, one row per session, written in the same transaction as its
-- subagent sessions. `state` is the state's JSON without `subagent_history` (those are the
-- sessions above, listed in `subagents` with how many messages and a digest of them, so a save
-- appends only what is new); fields this version does not know stay in the JSON as they came.
CREATE TABLE session_states (
    sid         INTEGER PRIMARY KEY,              -- sessions.sid
    type        TEXT NOT NULL,                    -- module.qualname of the state class that saved it
    state       TEXT NOT NULL,                    -- JSON object
    subagents   TEXT NOT NULL DEFAULT '[]',       -- JSON [[agent_name, count, digest], ...], in order
    saved_at    INTEGER NOT NULL
);

-- A deleted session takes its state with it; a renamed one keeps its subagent sessions.
CREATE TRIGGER session_states_on_delete AFTER DELETE ON sessions
BEGIN
    DELETE FROM session_states WHERE sid = OLD.sid;
END;
CREATE TRIGGER sessions_owner_on_rename AFTER UPDATE OF id ON sessions
BEGIN
    UPDATE sessions SET owner_id = NEW.id WHERE owner_id = OLD.id;
END;

-- version: 11 context_pools

-- Context queues and pools by name (axio_context_sqlite/pools). Entries are an append-only log
-- (`seq` never reused, so a branch's cut-off stays meaningful): a queue shows its newest `lim`
-- entries, a pool the latest entry of each key (a `removed` entry hides the key). A branch is a
-- row pointing at its parent and the last `seq` it sees there: no entry is copied. A clear
-- moves `base_seq`, hiding every entry at or before it. `version` grows with each change, so a
-- process sees in one read whether its cached state is still current.
CREATE TABLE context_pools (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL CHECK (kind IN ('queue', 'pool')),
    parent      INTEGER,                          -- context_pools.id of the branch's parent
    fork_seq    INTEGER,                          -- last parent-chain entry the branch sees
    base_seq    INTEGER NOT NULL DEFAULT 0,
    lim         INTEGER,
    tags        TEXT NOT NULL DEFAULT '[]',       -- JSON array
    hooks       TEXT NOT NULL DEFAULT '{}',       -- JSON {event: [hook names]}
    extra       TEXT NOT NULL DEFAULT '{}',       -- JSON: to_dict keys of a newer version
    size        INTEGER NOT NULL DEFAULT 0,
    version     INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX context_pools_by_parent ON context_pools (parent);

CREATE TABLE context_pool_entries (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    owner        INTEGER NOT NULL,                -- context_pools.id
    key          TEXT,                            -- the item's id (a pool's key)
    ord          INTEGER NOT NULL,                -- a pool key's insertion order (kept on replace)
    removed      INTEGER NOT NULL DEFAULT 0,
    description  TEXT,
    content      BLOB NOT NULL,                   -- MessagePack
    extra        BLOB                             -- MessagePack map: item keys of a newer version
);
CREATE INDEX context_pool_entries_by_owner ON context_pool_entries (owner, seq);
CREATE INDEX context_pool_entries_by_key ON context_pool_entries (owner, key, seq);

-- Description embeddings (float32 BLOBs) by entry, with the embedder that made them.
CREATE TABLE context_pool_vectors (
    seq        INTEGER PRIMARY KEY,               -- context_pool_entries.seq
    model      TEXT NOT NULL,
    embedding  BLOB NOT NULL
);

-- Pool descriptions for `select`, kept by triggers in the same transaction as the entry (a
-- queue's are not searched: they are not indexed).
CREATE VIRTUAL TABLE context_pool_fts USING fts5(
    description, content = 'context_pool_entries', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER context_pool_entries_ai AFTER INSERT ON context_pool_entries
WHEN NEW.description IS NOT NULL AND NEW.removed = 0
    AND (SELECT kind FROM context_pools WHERE id = NEW.owner) = 'pool'
BEGIN
    INSERT INTO context_pool_fts (rowid, description) VALUES (NEW.seq, NEW.description);
END;
CREATE TRIGGER context_pool_entries_ad AFTER DELETE ON context_pool_entries
WHEN OLD.description IS NOT NULL AND OLD.removed = 0
    AND (SELECT kind FROM context_pools WHERE id = OLD.owner) = 'pool'
BEGIN
    INSERT INTO context_pool_fts (context_pool_fts, rowid, description)
    VALUES ('delete', OLD.seq, OLD.description);
    DELETE FROM context_pool_vectors WHERE seq = OLD.seq;
END;

-- version: 12 usage_records

-- Per-request usage (axio_context/usage_limits, axio_context_sqlite/usage): one row per recorded
-- request, a ledger that clearing or deleting a session does not change. `message` is the
-- messages.id of the message recorded with it. Counts are pydantic-ai's; `cost` is a decimal
-- as text (NULL: unknown); `details` MessagePack of {details, extra} (NULL: none).
CREATE TABLE usage_records (
    id                       INTEGER PRIMARY KEY,
    at                       INTEGER NOT NULL,
    session                  TEXT NOT NULL,
    agent                    TEXT NOT NULL DEFAULT '',
    run                      TEXT NOT NULL DEFAULT '',
    model                    TEXT NOT NULL DEFAULT '',
    project                  TEXT,
    message                  INTEGER,
    requests                 INTEGER NOT NULL DEFAULT 0,
    tool_calls               INTEGER NOT NULL DEFAULT 0,
    input_tokens             INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_write_1h_tokens    INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens            INTEGER NOT NULL DEFAULT 0,
    unmeasured_requests      INTEGER NOT NULL DEFAULT 0,
    output_reasoning_tokens  INTEGER NOT NULL DEFAULT 0,
    input_audio_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_audio_read_tokens  INTEGER NOT NULL DEFAULT 0,
    output_audio_tokens      INTEGER NOT NULL DEFAULT 0,
    audio_seconds            REAL NOT NULL DEFAULT 0,
    cost                     TEXT,
    details                  BLOB
);
CREATE INDEX usage_records_by_session ON usage_records (session, at);
CREATE INDEX usage_records_by_run ON usage_records (run, session) WHERE run <> '';
CREATE INDEX usage_records_by_at ON usage_records (at);

-- Running totals of usage_records per (dimension, key, UTC day) and per (dimension, key) for all
-- time (day -1), kept in the same transaction as each row: dim is 'session', 'agent', 'run',
-- 'model', 'project' or 'day' (key ''). An aggregate or a scope's total reads these (an index
-- range), never the 1M rows behind them.
CREATE TABLE usage_rollups (
    dim                      TEXT NOT NULL,
    key                      TEXT NOT NULL,
    day                      INTEGER NOT NULL,
    requests                 INTEGER NOT NULL DEFAULT 0,
    tool_calls               INTEGER NOT NULL DEFAULT 0,
    input_tokens             INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_write_1h_tokens    INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens            INTEGER NOT NULL DEFAULT 0,
    unmeasured_requests      INTEGER NOT NULL DEFAULT 0,
    output_reasoning_tokens  INTEGER NOT NULL DEFAULT 0,
    input_audio_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_audio_read_tokens  INTEGER NOT NULL DEFAULT 0,
    output_audio_tokens      INTEGER NOT NULL DEFAULT 0,
    audio_seconds            REAL NOT NULL DEFAULT 0,
    cost                     TEXT,
    details                  BLOB,
    first_at                 INTEGER NOT NULL,
    last_at                  INTEGER NOT NULL,
    PRIMARY KEY (dim, key, day)
) WITHOUT ROWID;

-- version: 13 agent_runtime

-- The agent runtime layer (see axio_context/agents and axio_context_sqlite/agents): which agent
-- a session belongs to, which run wrote each message, and the messages `clear_run` took out.

-- An agent's conversation in a thread (ravi: (agent_id, thread_id)) is one ordinary session, so
-- listing, show, search and export see it; this row says whose it is.
CREATE TABLE agent_sessions (
    sid        INTEGER PRIMARY KEY,                 -- sessions.sid
    agent_id   TEXT NOT NULL,
    thread_id  TEXT NOT NULL,                       -- the caller's session_id
    UNIQUE (agent_id, thread_id)
);

-- Runs: a run id names one run of one thread, whatever agents take part in it.
CREATE TABLE agent_runs (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL UNIQUE,
    thread_id   TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

-- The run that wrote a message (id = messages.id); messages written outside a run have none.
-- A side table, so messages rows stay as they were and an untagged append writes nothing here.
-- No index by run: a tag then costs one small b-tree page in the append's commit (an index
-- was a second, +8% of an append), and a run's messages are found in its session's key range,
-- whose tags are tiny rows (clear_run on a 100,000-message session reads ~1,000 pages).
CREATE TABLE message_runs (
    id   INTEGER PRIMARY KEY,
    run  INTEGER NOT NULL                           -- agent_runs.id
);

-- Positions `clear_run` took out of a session's reads. Positions are immutable and sealed chunks
-- hold 64 messages in one row, so a cleared message stays where it is and is hidden here, per
-- (session, position): a fork made earlier still sees it, a fork made later inherits the mark.
-- `vacuum` purges a hidden row that only its session reads: its payload becomes an empty
-- message (the row stays, positions stay dense), its index entries and media references go.
CREATE TABLE hidden_messages (
    sid       INTEGER NOT NULL,                     -- sessions.sid of the session reading
    position  INTEGER NOT NULL,
    purged    INTEGER NOT NULL DEFAULT 0,           -- 1 once vacuum emptied the row
    PRIMARY KEY (sid, position)
) WITHOUT ROWID;

-- A deleted session takes its agent row and marks with it (its sid may be given out again).
CREATE TRIGGER agent_sessions_free AFTER DELETE ON sessions BEGIN
    DELETE FROM agent_sessions WHERE sid = OLD.sid;
    DELETE FROM hidden_messages WHERE sid = OLD.sid;
END;

-- version: 14 conversation_log

-- A framework's conversation log (pydantic-ai's ConversationStore): each conversation's record
-- (its own JSON, opaque here) with the revision a save checks, and where its head is. Entries
-- are messages of ordinary sessions (branches are forks): `conversation_entries` finds one by id.
CREATE TABLE conversation_records (
    id             TEXT PRIMARY KEY,              -- the conversation id
    scope          TEXT,
    revision       TEXT NOT NULL,
    updated_us     INTEGER NOT NULL,              -- the record's updated_at, microseconds (it orders listings)
    head_session   TEXT,                          -- the session holding the head entry; NULL: empty
    head_position  INTEGER,
    record         BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX conversation_records_by_time ON conversation_records (updated_us DESC);
CREATE INDEX conversation_records_by_scope ON conversation_records (scope, updated_us DESC);
CREATE TABLE conversation_entries (
    id          TEXT PRIMARY KEY,                 -- the entry id (its message's id too)
    session_id  TEXT NOT NULL,                    -- the session it was appended to
    position    INTEGER NOT NULL
) WITHOUT ROWID;

-- version: 15 activity_and_visible_counts

-- Listings go newest first by last activity (`updated_at`: an append, a token update, a title),
-- so a session just appended to heads them; one page stays one index range.
CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, sid DESC);
CREATE INDEX sessions_by_project_updated ON sessions (project, updated_at DESC, sid DESC);

-- How many positions of the session `clear_run` hid (its rows in hidden_messages), kept by the
-- triggers below whatever writes the marks (clear_run, fork, clear, pop, delete): a listing's
-- message count is `next_position - hidden_count` without reading the marks.
ALTER TABLE sessions ADD COLUMN hidden_count INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET hidden_count = (SELECT count(*) FROM hidden_messages h WHERE h.sid = sessions.sid)
    WHERE sid IN (SELECT sid FROM hidden_messages);
CREATE TRIGGER hidden_messages_count_insert AFTER INSERT ON hidden_messages BEGIN
    UPDATE sessions SET hidden_count = hidden_count + 1 WHERE sid = NEW.sid;
END;
CREATE TRIGGER hidden_messages_count_delete AFTER DELETE ON hidden_messages BEGIN
    UPDATE sessions SET hidden_count = hidden_count - 1 WHERE sid = OLD.sid;
END;

-- The token totals a fork started with (its parent's, copied as axio's fork copies them), so
-- `stats` counts each token once: a fork's own share is its totals less these. Forks made
-- before this version get the smaller of their totals and their parent's (the best estimate).
ALTER TABLE sessions ADD COLUMN fork_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN fork_output_tokens INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET
    fork_input_tokens = min(input_tokens, (SELECT p.input_tokens FROM sessions p WHERE p.id = sessions.parent_id)),
    fork_output_tokens = min(output_tokens, (SELECT p.output_tokens FROM sessions p WHERE p.id = sessions.parent_id))
    WHERE parent_id IN (SELECT id FROM sessions);

-- version: 16 expiry

-- A time to live on blob keys, task boards and vector documents (axio_context/expiry.py):
-- `ttl_ms` is the item's TTL (NULL: never expires) and `expires_at` when it expires (ms since the
-- epoch; a refreshing read moves it). Reads leave expired rows out; a sweep deletes them through
-- the partial index.
ALTER TABLE memory_blob_keys ADD COLUMN ttl_ms INTEGER;
ALTER TABLE memory_blob_keys ADD COLUMN expires_at INTEGER;
CREATE INDEX memory_blob_keys_expiry ON memory_blob_keys (expires_at) WHERE expires_at IS NOT NULL;
ALTER TABLE task_lists ADD COLUMN ttl_ms INTEGER;
ALTER TABLE task_lists ADD COLUMN expires_at INTEGER;
CREATE INDEX task_lists_expiry ON task_lists (expires_at) WHERE expires_at IS NOT NULL;
ALTER TABLE memory_documents ADD COLUMN ttl_ms INTEGER;
ALTER TABLE memory_documents ADD COLUMN expires_at INTEGER;
CREATE INDEX memory_documents_expiry ON memory_documents (expires_at) WHERE expires_at IS NOT NULL;

-- version: 17 memory_blocks

-- Memory blocks (axio_context/memory_blocks): a block's current fields and `version`, owned by
-- an agent (`agent_id`; '' is a shared block). Every change is a `memory_block_versions` row with
-- the fields after it, its action, when, by which agent and in which run; `undo_to`/`redo_to`
-- name the version an undo or redo restores. A shared block is shown to the agents
-- `memory_block_agents` attaches it to. Rowid tables: a block's text is often kilobytes, more than
-- a WITHOUT ROWID table keeps well in its b-tree's pages.
CREATE TABLE memory_blocks (
    id           TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL,                   -- the owner; '': shared
    label        TEXT NOT NULL,
    value        TEXT NOT NULL,
    char_limit   INTEGER NOT NULL,
    description  TEXT NOT NULL,
    read_only    INTEGER NOT NULL,
    version      INTEGER NOT NULL,                -- the current version (its versions row)
    created_at   INTEGER NOT NULL,                -- ms since the epoch
    updated_at   INTEGER NOT NULL,
    UNIQUE (agent_id, label)
);
CREATE TABLE memory_block_versions (
    block_id     TEXT NOT NULL REFERENCES memory_blocks (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    action       TEXT NOT NULL,
    label        TEXT NOT NULL,
    value        TEXT NOT NULL,
    char_limit   INTEGER NOT NULL,
    description  TEXT NOT NULL,
    read_only    INTEGER NOT NULL,
    undo_to      INTEGER,
    redo_to      INTEGER,
    agent_id     TEXT NOT NULL,                   -- who made the change
    run_id       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (block_id, version)
);
CREATE TABLE memory_block_agents (
    block_id     TEXT NOT NULL REFERENCES memory_blocks (id) ON DELETE CASCADE,
    agent_id     TEXT NOT NULL,
    PRIMARY KEY (block_id, agent_id)
) WITHOUT ROWID;
CREATE INDEX memory_block_agents_by_agent ON memory_block_agents (agent_id, block_id);

-- version: 18 session_expiry

-- A time to live on sessions (axio_context/expiry.py, as on memory items in version 16): reads
-- leave a session past `expires_at` out, a store that meets one deletes it, a sweep deletes them
-- through the partial index.
ALTER TABLE sessions ADD COLUMN ttl_ms INTEGER;
ALTER TABLE sessions ADD COLUMN expires_at INTEGER;
CREATE INDEX sessions_expiry ON sessions (expires_at) WHERE expires_at IS NOT NULL;

-- version: 19 message_turns

-- The user turns of a transcript (openai-agents' AxioAdvancedSession: branch from a turn, usage
-- per turn), one row per user message, written in the append's transaction. Keyed as the message
-- rows are: `seg` is the session whose rows hold the message (sessions.sid; a fork inherits its
-- parent's rows below its base_len, so it sees their turns too, nothing copied), `position` the
-- message's. `turn` is its number (1-based) in every transcript that sees it (they share the
-- prefix before it); `created_at` ms; `content` the message's content as JSON text (preview and
-- search). Rows go with their messages (pop, clear, delete; copied to a fork when its parent's
-- rows go).
CREATE TABLE message_turns (
    seg         INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    turn        INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    content     TEXT NOT NULL,
    PRIMARY KEY (seg, position)
) WITHOUT ROWID;
CREATE INDEX message_turns_by_number ON message_turns (seg, turn);

-- version: 20 pool_item_expiry

-- A time to live on context pool items (axio_context/pools/sql/expiry.py): an entry may carry
-- `ttl_ms` and `expires_at` (ms since the epoch). A read treats a key whose latest entry has
-- expired as removed at that instant, for every branch that sees the entry; a sweep turns expired
-- entries into removals (or deletes them with nothing left to hide) through the partial index.
ALTER TABLE context_pool_entries ADD COLUMN ttl_ms INTEGER;
ALTER TABLE context_pool_entries ADD COLUMN expires_at INTEGER;
CREATE INDEX context_pool_entries_expiry ON context_pool_entries (expires_at) WHERE expires_at IS NOT NULL;
