"""The PostgreSQL schema's steps: the SQL of each version, in order (:data:`MIGRATIONS`), run
by :func:`axio_context_postgres.schema.migrate`. A step is never edited once released, only
added after.

Data model (the SQLite backend's, with the lineage made explicit):

- ``segments``: a run of message rows. A segment's own rows are positions ``base_len..`` in
  ``messages``; positions below come from ``base_seg`` (recursively). A session points at its
  current segment. ``fork`` is one new segment based on the parent's at its length (O(1), no
  rows copied); ``clear`` gives the session a fresh segment, and ``pop`` either deletes the last
  row in place or, when a fork still sees it, starts a segment based on the old one without it.
  So rows are never changed under a fork: copy-on-write by pointers. A segment no session and
  no segment reaches any more is deleted with its rows.
- ``sessions``: one row per session, the row every write to it locks (``UPDATE ... RETURNING``
  hands out positions: dense and race-free with any number of writers, never ``COUNT(*)``).
- ``messages``: MessagePack payload, the text search indexes (``body`` for what people and the
  model wrote, ``tool`` for tool traffic), and a generated ``tsvector`` (body weight A, tool D)
  with a GIN index.
- ``checkpoints``: per session, copied on fork (a few rows), as in SQLite.
- ``session_states``: an agent's resumable state per session; subagent sessions carry
  ``owner_id``/``agent_name`` (see :mod:`.state`).
- ``embeddings``: pgvector rows, created when the ``vector`` extension is there (see
  :mod:`.vectors`); everything else works without it.
"""

from __future__ import annotations

from typing import Final

from .blocks_schema import MEMORY_BLOCKS
from .conversation_schema import CONVERSATION_LOG
from .expiry_schema import EXPIRY, POOL_ITEM_EXPIRY, SESSION_EXPIRY
from .turns_schema import MESSAGE_TURNS

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

_V1: Final = """
CREATE TABLE axio_settings (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE segments (
    seg bigserial PRIMARY KEY,
    base_seg bigint REFERENCES segments (seg),
    base_len integer NOT NULL DEFAULT 0,
    owner text NOT NULL
);
CREATE INDEX segments_base ON segments (base_seg) WHERE base_seg IS NOT NULL;
CREATE TABLE sessions (
    sid bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    seg bigint NOT NULL,
    project text,
    parent_id text,
    fork_position integer,
    title text,
    metadata bytea,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    next_position integer NOT NULL DEFAULT 0,
    est_tokens bigint NOT NULL DEFAULT 0,
    preview text,
    preview_pos integer,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    next_checkpoint integer NOT NULL DEFAULT 1
);
CREATE INDEX sessions_listing ON sessions (created_at DESC, sid DESC);
CREATE INDEX sessions_project ON sessions (project, created_at DESC, sid DESC);
CREATE INDEX sessions_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX sessions_seg ON sessions (seg);
CREATE TABLE messages (
    seg bigint NOT NULL,
    position integer NOT NULL,
    role text NOT NULL,
    created_at bigint NOT NULL,
    tokens integer NOT NULL,
    payload bytea NOT NULL,
    body text NOT NULL DEFAULT '',
    tool text NOT NULL DEFAULT '',
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', body), 'A') || setweight(to_tsvector('simple', tool), 'D')
    ) STORED,
    PRIMARY KEY (seg, position)
);
CREATE INDEX messages_tsv ON messages USING gin (tsv);
CREATE TABLE checkpoints (
    sid bigint NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
    seq integer NOT NULL,
    position integer NOT NULL,
    summary bytea NOT NULL,
    tokens_before bigint NOT NULL,
    tokens_after bigint NOT NULL,
    summarizer text NOT NULL,
    created_at bigint NOT NULL,
    summary_tokens bigint NOT NULL,
    tokens_at bigint NOT NULL,
    PRIMARY KEY (sid, seq)
);
"""

# The memory stores (axio_context.memory on PostgreSQL: see .memory). Vector documents are
# created by the vector store once pgvector is there (their column is a ``vector``), like the
# messages' embeddings; everything here works without the extension.
_V2_MEMORY_STORES: Final = """
CREATE TABLE memory_collections (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    dimension integer NOT NULL,
    embedder text NOT NULL DEFAULT '',
    created_at bigint NOT NULL
);
CREATE TABLE memory_blob_data (
    hash bytea PRIMARY KEY,
    size bigint NOT NULL
);
CREATE TABLE memory_blob_pieces (
    hash bytea NOT NULL REFERENCES memory_blob_data (hash) ON DELETE CASCADE,
    seq integer NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (hash, seq)
);
CREATE TABLE memory_blob_keys (
    key text PRIMARY KEY,
    hash bytea NOT NULL REFERENCES memory_blob_data (hash),
    content_type text NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX memory_blob_keys_by_hash ON memory_blob_keys (hash);
CREATE TABLE graph_entities (
    id text PRIMARY KEY,
    type text NOT NULL,
    properties jsonb NOT NULL DEFAULT '{}'
);
CREATE TABLE graph_relationships (
    id text PRIMARY KEY,
    source text NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
    target text NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
    type text NOT NULL,
    properties jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX graph_relationships_by_source ON graph_relationships (source, type);
CREATE INDEX graph_relationships_by_target ON graph_relationships (target, type);
CREATE TABLE task_lists (
    id text PRIMARY KEY,
    conversation_id text NOT NULL,
    agent_id text NOT NULL DEFAULT '',
    agent_label text NOT NULL DEFAULT '',
    parent_agent_id text,
    max_retries integer NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    UNIQUE (conversation_id, agent_id)
);
CREATE INDEX task_lists_newest ON task_lists (created_at DESC, id DESC);
CREATE TABLE tasks (
    list_id text NOT NULL REFERENCES task_lists (id) ON DELETE CASCADE,
    id text NOT NULL,
    title text NOT NULL,
    status text NOT NULL,
    ord integer NOT NULL,
    retry_count integer NOT NULL DEFAULT 0,
    note text NOT NULL DEFAULT '',
    PRIMARY KEY (list_id, id)
);
"""

# The history provider (axio_context.agents on PostgreSQL: see .agents). An agent's
# conversation in a thread is one ordinary session with an ``agent_sessions`` row saying whose it
# is; a run id names one run of one thread; a message's run tag and clear_run's marks point at
# the message row, so they go with it when pop or a freed segment deletes it. A mark hides the
# row from the session that cleared the run (``sid``): a fork made before keeps seeing it, a fork
# made after inherits the marks (the trigger; fork locks the parent's row, clear_run too).
_V3_AGENT_HISTORY: Final = """
CREATE TABLE agent_sessions (
    sid bigint PRIMARY KEY REFERENCES sessions (sid) ON DELETE CASCADE,
    agent_id text NOT NULL,
    thread_id text NOT NULL,
    UNIQUE (agent_id, thread_id)
);
CREATE TABLE agent_runs (
    id bigserial PRIMARY KEY,
    run_id text NOT NULL UNIQUE,
    thread_id text NOT NULL,
    created_at bigint NOT NULL
);
CREATE TABLE message_runs (
    seg bigint NOT NULL,
    position integer NOT NULL,
    run bigint NOT NULL REFERENCES agent_runs (id),
    PRIMARY KEY (seg, position),
    FOREIGN KEY (seg, position) REFERENCES messages (seg, position) ON DELETE CASCADE
);
CREATE INDEX message_runs_by_run ON message_runs (run, seg, position);
CREATE TABLE hidden_messages (
    sid bigint NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
    seg bigint NOT NULL,
    position integer NOT NULL,
    PRIMARY KEY (sid, seg, position),
    FOREIGN KEY (seg, position) REFERENCES messages (seg, position) ON DELETE CASCADE
);
CREATE INDEX hidden_messages_rows ON hidden_messages (seg, position);
CREATE FUNCTION axio_fork_marks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO hidden_messages (sid, seg, position)
    SELECT NEW.sid, h.seg, h.position FROM hidden_messages h JOIN sessions p ON p.sid = h.sid
    WHERE p.id = NEW.parent_id;
    RETURN NULL;
END $$;
CREATE TRIGGER sessions_fork_marks AFTER INSERT ON sessions
    FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL) EXECUTE FUNCTION axio_fork_marks();
"""

#: The counters a usage record carries and a rollup sums, column for column (the same list in both
#: tables, written once).
_USAGE_COUNTERS: Final = """\
    requests bigint NOT NULL DEFAULT 0,
    tool_calls bigint NOT NULL DEFAULT 0,
    input_tokens bigint NOT NULL DEFAULT 0,
    cache_write_tokens bigint NOT NULL DEFAULT 0,
    cache_write_1h_tokens bigint NOT NULL DEFAULT 0,
    cache_read_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    unmeasured_requests bigint NOT NULL DEFAULT 0,
    output_reasoning_tokens bigint NOT NULL DEFAULT 0,
    input_audio_tokens bigint NOT NULL DEFAULT 0,
    cache_audio_read_tokens bigint NOT NULL DEFAULT 0,
    output_audio_tokens bigint NOT NULL DEFAULT 0,
    audio_seconds double precision NOT NULL DEFAULT 0,
    cost numeric,
    details bytea"""

# Persisted usage (axio_context.usage_limits on PostgreSQL: see .usage). ``usage_records`` is the
# ledger, one row per recorded request (clearing or deleting a session leaves it); ``position`` is
# the position of the message recorded with it. ``cost`` is an exact numeric (NULL: unknown),
# ``details`` MessagePack of {details, extra} (NULL: none). ``usage_runs`` gives each run id its
# one session (its primary key is what makes two writers claiming one run queue, not race).
# ``usage_rollups`` keeps running totals per (dimension, key, UTC day) and per (dimension, key)
# for all time (day -1), in the transaction of each row, so totals and aggregates read one index
# range, never the rows behind them: a scope's by its key (the primary key), a dimension's
# groups by day (``usage_rollups_by_day``).
_USAGE_RECORDS: Final = f"""
CREATE TABLE usage_records (
    id bigserial PRIMARY KEY,
    at bigint NOT NULL,
    session text NOT NULL,
    agent text NOT NULL DEFAULT '',
    run text NOT NULL DEFAULT '',
    model text NOT NULL DEFAULT '',
    project text,
    position integer,
{_USAGE_COUNTERS}
);
CREATE INDEX usage_records_by_session ON usage_records (session, at DESC, id DESC);
CREATE INDEX usage_records_by_run ON usage_records (run, at DESC, id DESC);
CREATE INDEX usage_records_by_at ON usage_records (at DESC, id DESC);
CREATE TABLE usage_runs (
    run text PRIMARY KEY,
    session text NOT NULL
);
CREATE TABLE usage_rollups (
    dim text NOT NULL,
    key text NOT NULL,
    day integer NOT NULL,
{_USAGE_COUNTERS},
    first_at bigint NOT NULL,
    last_at bigint NOT NULL,
    PRIMARY KEY (dim, key, day)
);
CREATE INDEX usage_rollups_by_day ON usage_rollups (dim, day, key);
"""

# Context queues and pools by name (axio_context_postgres.pools, the SQLite step of the same
# name's model): entries are an append-only log whose ``seq`` comes from one sequence, so a
# branch's cut-off (``fork_seq``) and a clear's ``base_seq`` are points in it; a branch is one
# row, no entry copied. Every change locks its container's row (``FOR UPDATE``) and bumps
# ``version``. Pool descriptions are searched by a generated ``tsvector`` (GIN); embeddings are
# ``real[]`` (any dimension, any embedder), ranked with pgvector's ``<=>`` when it is installed.
_CONTEXT_POOLS: Final = """
CREATE SEQUENCE context_pool_seq;
CREATE TABLE context_pools (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    kind text NOT NULL CHECK (kind IN ('queue', 'pool')),
    parent bigint REFERENCES context_pools (id),
    fork_seq bigint,
    base_seq bigint NOT NULL DEFAULT 0,
    lim integer,
    tags text NOT NULL DEFAULT '[]',
    hooks text NOT NULL DEFAULT '{}',
    extra text NOT NULL DEFAULT '{}',
    size integer NOT NULL DEFAULT 0,
    version bigint NOT NULL DEFAULT 0,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);
CREATE INDEX context_pools_by_parent ON context_pools (parent) WHERE parent IS NOT NULL;
CREATE TABLE context_pool_entries (
    seq bigint PRIMARY KEY DEFAULT nextval('context_pool_seq'),
    owner bigint NOT NULL REFERENCES context_pools (id),
    key text,
    ord bigint NOT NULL,
    removed boolean NOT NULL DEFAULT false,
    description text,
    content bytea NOT NULL,
    extra bytea,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', COALESCE(description, ''))) STORED
);
CREATE INDEX context_pool_entries_by_owner ON context_pool_entries (owner, seq);
CREATE INDEX context_pool_entries_by_key ON context_pool_entries (owner, key, seq);
CREATE INDEX context_pool_entries_tsv ON context_pool_entries USING gin (tsv);
CREATE TABLE context_pool_vectors (
    seq bigint PRIMARY KEY REFERENCES context_pool_entries (seq) ON DELETE CASCADE,
    model text NOT NULL,
    embedding real[] NOT NULL
);
"""

# Resumable agent state (axio_context.state on PostgreSQL: see .state). A subagent's history is a
# session of its own, owned by the session of the agent that ran it (``owner_id`` = that
# session's id, ``agent_name`` = the subagent's key in the state); ownership is not lineage.
# ``session_states`` holds one row per session: the state's JSON without ``subagent_history``
# (kept as text, so unknown fields come back exactly as written), and per subagent its message
# count and a digest, so a save appends only what is new. A deleted session takes its state
# with it (its subagent sessions stay, as roots); a renamed one keeps its subagent sessions.
_RESUMABLE_STATE: Final = """
ALTER TABLE sessions ADD COLUMN owner_id text;
ALTER TABLE sessions ADD COLUMN agent_name text;
CREATE UNIQUE INDEX sessions_by_owner ON sessions (owner_id, agent_name) WHERE owner_id IS NOT NULL;
CREATE TABLE session_states (
    sid bigint PRIMARY KEY REFERENCES sessions (sid) ON DELETE CASCADE,
    type text NOT NULL,
    state text NOT NULL,
    subagents text NOT NULL DEFAULT '[]',
    saved_at bigint NOT NULL
);
CREATE FUNCTION axio_sessions_owner_on_rename() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET owner_id = NEW.id WHERE owner_id = OLD.id;
    RETURN NULL;
END $$;
CREATE TRIGGER sessions_owner_on_rename AFTER UPDATE OF id ON sessions
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION axio_sessions_owner_on_rename();
"""

# Listings go newest first by last activity (``updated_at``), one index range a page. A session's
# ``hidden_count`` is how many marks ``clear_run`` left on it (hidden_messages rows), kept by the
# statement triggers below whatever writes or drops the marks (clear_run, the fork trigger,
# clear, pop, cascades), so a listing's count is ``next_position - hidden_count``. A fork's
# ``fork_input_tokens``/``fork_output_tokens`` are the totals it started with (its parent's, as
# axio's fork copies them): ``stats`` counts a fork's totals less these, each token once. Forks
# made before this version get the smaller of their totals and their parent's.
_ACTIVITY_AND_VISIBLE_COUNTS: Final = """
CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, sid DESC);
CREATE INDEX sessions_by_project_updated ON sessions (project, updated_at DESC, sid DESC);
ALTER TABLE sessions ADD COLUMN hidden_count integer NOT NULL DEFAULT 0;
UPDATE sessions s SET hidden_count = h.n
    FROM (SELECT sid, count(*) AS n FROM hidden_messages GROUP BY sid) h WHERE h.sid = s.sid;
CREATE FUNCTION axio_hidden_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions s SET hidden_count = s.hidden_count + a.n
    FROM (SELECT sid, count(*) AS n FROM added GROUP BY sid) a WHERE a.sid = s.sid;
    RETURN NULL;
END $$;
CREATE FUNCTION axio_hidden_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions s SET hidden_count = s.hidden_count - r.n
    FROM (SELECT sid, count(*) AS n FROM removed GROUP BY sid) r WHERE r.sid = s.sid;
    RETURN NULL;
END $$;
CREATE TRIGGER hidden_messages_added AFTER INSERT ON hidden_messages
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION axio_hidden_added();
CREATE TRIGGER hidden_messages_removed AFTER DELETE ON hidden_messages
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION axio_hidden_removed();
ALTER TABLE sessions ADD COLUMN fork_input_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN fork_output_tokens bigint NOT NULL DEFAULT 0;
UPDATE sessions s SET fork_input_tokens = LEAST(s.input_tokens, p.input_tokens),
    fork_output_tokens = LEAST(s.output_tokens, p.output_tokens)
    FROM sessions p WHERE p.id = s.parent_id;
"""

#: (version, SQL) in order; a step is never edited once released, only added after.
MIGRATIONS: Final[tuple[tuple[int, str], ...]] = (
    (1, _V1),
    (2, _V2_MEMORY_STORES),
    (3, _V3_AGENT_HISTORY),
    (4, _USAGE_RECORDS),
    (5, _CONTEXT_POOLS),
    (6, _RESUMABLE_STATE),
    (7, CONVERSATION_LOG),  # pydantic-ai's ConversationStore (see .conversation_log)
    (8, _ACTIVITY_AND_VISIBLE_COUNTS),
    (9, EXPIRY),  # a time to live on memory items (see .expiry_schema)
    (10, MEMORY_BLOCKS),  # see .blocks_schema
    (11, SESSION_EXPIRY),  # a time to live on sessions (see .expiry_schema)
    (12, MESSAGE_TURNS),  # a transcript's user turns (see .turns_schema)
    (13, POOL_ITEM_EXPIRY),  # a time to live on context pool items (see .expiry_schema)
)

#: The schema version this code writes.
SCHEMA_VERSION: Final = MIGRATIONS[-1][0]
