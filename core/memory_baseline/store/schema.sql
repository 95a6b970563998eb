-- The schema of one index, formatted with psycopg.sql before it runs: the index's
-- schema name and the vector dimension are placeholders, and literal braces are doubled.
-- Chunk rows are immutable; statement-level triggers keep the BM25 statistics and
-- posting arrays in the same transaction as the chunks (see memory_baseline.store.bm25).
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.representations (
    representation_id text PRIMARY KEY,
    chunker jsonb NOT NULL,
    embedder jsonb NOT NULL,
    dimension integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {s}.sources (
    source_id text PRIMARY KEY,
    kind text NOT NULL,
    content_hash text NOT NULL,
    size_bytes bigint NOT NULL,
    artifact_time timestamptz,
    observed_at timestamptz NOT NULL DEFAULT now(),
    observation_status text NOT NULL DEFAULT 'ok' CHECK (observation_status IN ('ok', 'failed')),
    observation_error text,
    representation_id text REFERENCES {s}.representations
);
CREATE OR REPLACE FUNCTION {s}.tsv_length(tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer
            FROM unnest($1) AS u);
CREATE TABLE IF NOT EXISTS {s}.chunks (
    chunk_key bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    chunk_id text PRIMARY KEY,
    source_id text NOT NULL REFERENCES {s}.sources ON DELETE CASCADE,
    ordinal integer NOT NULL,
    char_start integer NOT NULL,
    char_end integer NOT NULL,
    section text,
    text text NOT NULL,
    content_hash text NOT NULL,
    representation_id text NOT NULL REFERENCES {s}.representations,
    identifiers text[] NOT NULL DEFAULT '{{}}',
    name_terms text[] NOT NULL DEFAULT '{{}}',
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)
        || array_to_tsvector(identifiers || name_terms)) STORED,
    doc_len integer GENERATED ALWAYS AS ({s}.tsv_length(to_tsvector('english', text)
        || array_to_tsvector(identifiers || name_terms))) STORED,
    embedding vector({dim}) NOT NULL,
    line_start integer,  -- the lines the span covers (1-based, inclusive): citations open them
    line_end integer
);
CREATE INDEX IF NOT EXISTS chunks_source_idx ON {s}.chunks (source_id, ordinal);
CREATE INDEX IF NOT EXISTS chunks_tsv_gin ON {s}.chunks USING gin (tsv);
CREATE INDEX IF NOT EXISTS chunks_name_terms_gin ON {s}.chunks USING gin (name_terms);
CREATE INDEX IF NOT EXISTS chunks_representation_idx ON {s}.chunks (representation_id);
CREATE TABLE IF NOT EXISTS {s}.bm25_segments (
    lexeme text NOT NULL,
    segment bigint GENERATED ALWAYS AS IDENTITY,
    postings bytea NOT NULL,
    PRIMARY KEY (lexeme, segment)
);
ALTER TABLE {s}.bm25_segments ALTER COLUMN postings SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS {s}.bm25_tombstones (chunk_key bigint PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {s}.bm25_dirty_terms (lexeme text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {s}.term_stats (lexeme text PRIMARY KEY, df integer NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.corpus_stats (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    n_chunks bigint NOT NULL,
    total_len bigint NOT NULL
);
INSERT INTO {s}.corpus_stats VALUES (true, 0, 0) ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION {s}.bm25_add() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows WHERE doc_len > 32767) THEN
        RAISE EXCEPTION 'a chunk of more than 32767 lexemes does not fit the BM25 posting format';
    END IF;
    -- One delta segment per term of this statement: 8 bytes a posting (see bm25.POSTING).
    INSERT INTO {s}.bm25_segments (lexeme, postings)
        SELECT u.lexeme, string_agg(int4send(n.chunk_key::int4)
                   || int2send((CASE WHEN u.lexeme = ANY(n.name_terms) THEN -1 ELSE 1 END
                                * least(coalesce(array_length(u.positions, 1), 1), 32767))::int2)
                   || int2send(n.doc_len::int2), '' ORDER BY n.chunk_key)
        FROM new_rows n, unnest(n.tsv) u GROUP BY u.lexeme ORDER BY u.lexeme;
    INSERT INTO {s}.term_stats AS t (lexeme, df)
        SELECT u.lexeme, count(*) FROM new_rows n, unnest(n.tsv) u GROUP BY u.lexeme
        ORDER BY u.lexeme
        ON CONFLICT (lexeme) DO UPDATE SET df = t.df + excluded.df;
    UPDATE {s}.corpus_stats SET n_chunks = n_chunks + d.n, total_len = total_len + d.len
        FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM new_rows) d;
    RETURN NULL;
END $body$;
CREATE OR REPLACE FUNCTION {s}.bm25_remove() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    INSERT INTO {s}.bm25_tombstones (chunk_key) SELECT chunk_key FROM old_rows
        ORDER BY chunk_key ON CONFLICT DO NOTHING;
    INSERT INTO {s}.bm25_dirty_terms (lexeme)
        SELECT DISTINCT u.lexeme FROM old_rows o, unnest(o.tsv) u ORDER BY u.lexeme
        ON CONFLICT DO NOTHING;
    UPDATE {s}.term_stats t SET df = t.df - d.n FROM (
        SELECT u.lexeme, count(*) AS n FROM old_rows o, unnest(o.tsv) u
        GROUP BY u.lexeme ORDER BY u.lexeme) d
        WHERE t.lexeme = d.lexeme;
    DELETE FROM {s}.term_stats WHERE df <= 0;
    UPDATE {s}.corpus_stats SET n_chunks = n_chunks - d.n, total_len = total_len - d.len
        FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM old_rows) d;
    RETURN NULL;
END $body$;
CREATE OR REPLACE FUNCTION {s}.chunks_immutable() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF NEW.text IS DISTINCT FROM OLD.text OR NEW.identifiers IS DISTINCT FROM OLD.identifiers
       OR NEW.name_terms IS DISTINCT FROM OLD.name_terms
       OR NEW.chunk_key IS DISTINCT FROM OLD.chunk_key THEN
        RAISE EXCEPTION 'chunk text is immutable: replace the source instead';
    END IF;
    RETURN NEW;
END $body$;
DROP TRIGGER IF EXISTS chunks_bm25_add ON {s}.chunks;
CREATE TRIGGER chunks_bm25_add AFTER INSERT ON {s}.chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {s}.bm25_add();
DROP TRIGGER IF EXISTS chunks_bm25_remove ON {s}.chunks;
CREATE TRIGGER chunks_bm25_remove AFTER DELETE ON {s}.chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {s}.bm25_remove();
DROP TRIGGER IF EXISTS chunks_immutable ON {s}.chunks;
CREATE TRIGGER chunks_immutable BEFORE UPDATE ON {s}.chunks
    FOR EACH ROW EXECUTE FUNCTION {s}.chunks_immutable();
