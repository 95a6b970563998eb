"""Integrity checks of an index: does the substrate hold what it claims?

Health is not memory quality: an index can pass every check here and still
retrieve the wrong evidence. What it catches are the defects that would make a
wrong answer meaningless to diagnose: chunks without a source, sources without
chunks (a hash ahead of its text), vectors of another representation, BM25
statistics that no longer match the text, posting arrays that disagree with
those statistics, missing indexes. Failed observations
(files that could not be read on the last pass) are reported as warnings: the
last good content is still served.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import psycopg
from psycopg import sql

from .store import HNSW_INDEX, Store


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    severity: str = "error"  # error fails the report; warning does not


@dataclass
class HealthReport:
    index: str
    counts: dict[str, int]
    representations: dict[str, int]
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks if c.severity == "error")

    def to_dict(self) -> dict:
        data = asdict(self)
        data["ok"] = self.ok
        return data


def check_health(
    conn: psycopg.Connection, index: str, expected_representation: str | None,
    *, expect_hnsw: bool = True,
) -> HealthReport:
    store = Store(conn, index)
    store.require()
    s = store.schema

    def scalar(query: str) -> int:
        row = conn.execute(sql.SQL(query).format(s=s)).fetchone()
        return int(row[0] or 0)

    counts = store.counts()
    representations = store.representations_in_use()
    report = HealthReport(index=index, counts=counts, representations=representations)
    add = report.checks.append

    orphans = scalar("SELECT count(*) FROM {s}.chunks c LEFT JOIN {s}.sources x "
                     "USING (source_id) WHERE x.source_id IS NULL")
    add(Check("orphan_chunks", orphans == 0, f"{orphans} chunk(s) without a source"))

    empty = scalar("SELECT count(*) FROM {s}.sources x WHERE NOT EXISTS "
                   "(SELECT 1 FROM {s}.chunks c WHERE c.source_id = x.source_id)")
    add(Check("sources_without_chunks", empty == 0, f"{empty} source(s) with no chunks"))

    if expected_representation is not None:
        foreign = sum(n for rep, n in representations.items() if rep != expected_representation)
        add(Check(
            "foreign_representation", foreign == 0,
            f"{foreign} chunk(s) not in the configured representation {expected_representation}",
        ))
    add(Check(
        "single_representation", len(representations) <= 1,
        f"{len(representations)} representation(s) in use: {sorted(representations)}",
    ))

    mismatched = scalar(
        "SELECT count(*) FROM {s}.sources x WHERE x.representation_id IS DISTINCT FROM "
        "(SELECT min(c.representation_id) FROM {s}.chunks c WHERE c.source_id = x.source_id) "
        "AND EXISTS (SELECT 1 FROM {s}.chunks c WHERE c.source_id = x.source_id)"
    )
    add(Check("source_representation_matches_chunks", mismatched == 0,
              f"{mismatched} source(s) whose recorded representation differs from their chunks"))

    duplicate_sources = scalar(
        "SELECT count(*) FROM (SELECT content_hash FROM {s}.sources GROUP BY 1 "
        "HAVING count(*) > 1) d"
    )
    add(Check("duplicate_source_hashes", True,
              f"{duplicate_sources} content hash(es) shared by several sources", "warning"))

    stats_row = conn.execute(sql.SQL(
        "SELECT (SELECT n_chunks FROM {s}.corpus_stats), (SELECT total_len FROM {s}.corpus_stats),"
        " (SELECT count(*) FROM {s}.chunks), (SELECT coalesce(sum(doc_len), 0) FROM {s}.chunks)"
    ).format(s=s)).fetchone()
    add(Check("bm25_corpus_stats", stats_row[0] == stats_row[2] and stats_row[1] == stats_row[3],
              f"maintained n={stats_row[0]} len={stats_row[1]}; "
              f"recomputed n={stats_row[2]} len={stats_row[3]}"))
    drift = scalar(
        "SELECT count(*) FROM (SELECT u.lexeme, count(*) AS df FROM {s}.chunks c, unnest(c.tsv) u "
        "GROUP BY 1) p FULL JOIN {s}.term_stats t USING (lexeme) WHERE p.df IS DISTINCT FROM t.df"
    )
    add(Check("bm25_term_stats", drift == 0,
              f"{drift} term(s) whose maintained df differs from the chunks' text"))
    # The posting arrays against the statistics (the source of truth) and the chunk rows.
    arrays = store.check_bm25_segments()
    maintained_df = dict(conn.execute(sql.SQL("SELECT lexeme, df FROM {s}.term_stats").format(s=s)))
    array_drift = sorted(t for t in maintained_df.keys() | arrays.live_df.keys()
                         if maintained_df.get(t) != arrays.live_df.get(t))
    add(Check("bm25_arrays_df", not array_drift,
              f"{len(array_drift)} term(s) whose live postings differ from df"
              + (f", e.g. {array_drift[:5]}" if array_drift else "")))
    lexemes = scalar("SELECT count(*) FROM {s}.chunks c, unnest(c.tsv)")
    add(Check("bm25_arrays_postings", arrays.live_postings == lexemes,
              f"live postings in arrays {arrays.live_postings}, chunk lexemes {lexemes}"))
    add(Check("bm25_arrays_well_formed", not arrays.malformed_terms,
              f"{len(arrays.malformed_terms)} term(s) whose arrays contradict the chunks"
              + (f", e.g. {arrays.malformed_terms[:5]}" if arrays.malformed_terms else "")))
    live_tombstones = scalar("SELECT count(*) FROM {s}.bm25_tombstones t JOIN {s}.chunks c "
                             "USING (chunk_key)")
    add(Check("bm25_tombstones", live_tombstones == 0,
              f"{live_tombstones} tombstone(s) of chunks that still exist"))
    backlog = store.bm25_backlog()
    add(Check("bm25_compaction_backlog", True,
              f"{backlog['multi_segment_terms']} term(s) in several segments, "
              f"{backlog['dirty_terms']} with removed postings, {backlog['tombstones']} "
              "tombstone(s) (queries are exact either way; refresh compacts)", "warning"))

    gin = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                       (f'"{index}".chunks_tsv_gin',)).fetchone()[0]
    add(Check("fulltext_index", bool(gin), "GIN index on chunks.tsv " + ("present" if gin else "missing")))
    hnsw = store.has_hnsw()
    add(Check("vector_index", hnsw or not expect_hnsw,
              f"HNSW index {HNSW_INDEX} " + ("present" if hnsw else "missing"),
              "error" if expect_hnsw else "warning"))

    add(Check("failed_observations", counts["failed_observations"] == 0,
              f"{counts['failed_observations']} source(s) whose last read failed "
              "(last good content kept)", "warning"))
    return report
