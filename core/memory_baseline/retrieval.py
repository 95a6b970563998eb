"""Candidate retrieval: a lexical path, a dense path, and rank fusion.

Lexical. Two rankers over the same stored tsvector (English lexemes plus the
identifier terms of `memory_baseline.identifiers`), with the query's terms
OR-ed so a passage need not contain every word of a question:

- ``bm25`` (default): exact Okapi BM25 over per-term posting arrays that
  triggers keep in the same transaction as the chunks, fetched in one statement
  and scored with numpy (`memory_baseline.store.bm25`).
  Measured on BEIR SciFact, PostgreSQL's own ranking is far weaker because
  it has no IDF: ``ts_rank_cd`` nDCG@10 0.319, BM25 0.686 (see the README).
- ``tsrank-cd``: the chapter's `ts_rank_cd` ranking, kept as a named condition
  so the difference stays measurable.

Identifiers (``adr-007``, ``E-BRK-042``, ``publish_shipment_event``, version
strings, file names) are found because the same Python rule extracts them
from passages at write time and from the question at query time, and because
each chunk carries its source path, file name and stem as terms. We chose a
second set of terms inside the one tsvector over a custom text-search
configuration: a configuration cannot keep ``session-040`` whole (the parser
emits ``session`` and the signed integer ``-040`` before any dictionary runs),
while explicit terms can, and they share the GIN index and the BM25 statistics.

Dense. Cosine distance with pgvector over vectors of the configured
representation only (a search never mixes encoders). With HNSW the query raises
``hnsw.ef_search`` to at least the candidate count and uses iterative scan, so
asking for 30 candidates returns 30 (measured: at the default ``ef_search`` 40
a top-100 query returned about 40 rows). ``dense_plan = "exact"`` forces the
exact scan; ``explain = true`` records the plan that actually ran.

Overlap. With both paths on, the lexical path runs on a second connection in a
worker thread while the query is encoded and the HNSW query runs, so a hybrid
query costs about the slower path, not their sum. From inside a transaction the
paths run one after the other on the caller's connection, which alone sees the
transaction's own writes.

Fusion. Reciprocal rank fusion (k = 60 by default) combines the two rankings
without pretending their scores share a scale; a convex blend of min-max
normalised scores is available as ``fusion = "blend"``. The trace reports
each path's count and the size of the fused union — the real candidate budget.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import psycopg

from .answer_cache import AnswerCache
from .config import Config
from .embedders import Embedder, get_embedder
from .identifiers import extract_identifiers, file_keys
from .passages import Passage
from .representation import representation_id
from .rerank import Reranker, get_reranker
from .store import Hit, Store, StoreError, query_terms


@dataclass(frozen=True)
class Candidate:
    chunk_id: str
    source_id: str
    score: float
    rank: int


@dataclass(frozen=True)
class Stage:
    """One ranked list of the pipeline and what it cost."""

    name: str
    candidates: tuple[Candidate, ...]
    ms: float
    detail: dict = field(default_factory=dict)

    @property
    def source_ids(self) -> list[str]:
        """Distinct sources in rank order."""
        return list(dict.fromkeys(c.source_id for c in self.candidates))

    @classmethod
    def from_dict(cls, data: dict) -> Stage:
        return cls(data["name"], tuple(Candidate(**c) for c in data["candidates"]), data["ms"],
                   dict(data.get("detail", {})))

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "ms": round(self.ms, 3),
            "detail": self.detail,
            "source_ids": self.source_ids,
            "candidates": [asdict(c) for c in self.candidates],
        }


@dataclass(frozen=True)
class RetrievalResult:
    query: str
    stages: tuple[Stage, ...]
    passages: dict[str, Passage]
    representation_id: str
    # The identifier-priority level of each promoted chunk (`identifier_priority`), decided
    # here once: context assembly reads it to put the documents a question names first.
    priority: dict[str, int] = field(default_factory=dict)

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    @property
    def final(self) -> Stage:
        """The list handed to context assembly (the reranked stage, a pass-through without a reranker)."""
        return self.stage("reranked") or self.stage("fused") or self.stages[-1]

    @property
    def reranker_ran(self) -> bool:
        stage = self.stage("reranked")
        return bool(stage and not stage.detail.get("pass_through", False))

    @classmethod
    def from_dict(cls, data: dict) -> RetrievalResult:
        """A result read back from its `to_dict` (a case record); passage texts are not kept there."""
        return cls(data["query"], tuple(Stage.from_dict(s) for s in data["stages"]), {},
                   data["representation_id"])

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "representation_id": self.representation_id,
            "stages": [s.to_dict() for s in self.stages],
        }


def _ranked(hits: Sequence[Hit]) -> tuple[Candidate, ...]:
    return tuple(Candidate(h.chunk_id, h.source_id, h.score, i) for i, h in enumerate(hits, 1))


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Candidate]], k: int) -> list[Candidate]:
    """Sum of 1/(k + rank) over the lists a chunk appears in; ties broken by chunk id."""
    scores: dict[str, float] = {}
    sources: dict[str, str] = {}
    for ranking in rankings:
        for candidate in ranking:
            scores[candidate.chunk_id] = scores.get(candidate.chunk_id, 0.0) + 1.0 / (k + candidate.rank)
            sources[candidate.chunk_id] = candidate.source_id
    ordered = sorted(scores, key=lambda cid: (-scores[cid], cid))
    return [Candidate(cid, sources[cid], scores[cid], i) for i, cid in enumerate(ordered, 1)]


def convex_blend(
    lexical: Sequence[Candidate], dense: Sequence[Candidate], dense_weight: float
) -> list[Candidate]:
    """w * dense + (1 - w) * lexical on min-max normalised scores (absent = 0)."""

    def normalised(ranking: Sequence[Candidate]) -> dict[str, float]:
        if not ranking:
            return {}
        values = [c.score for c in ranking]
        low, high = min(values), max(values)
        span = high - low
        return {c.chunk_id: (c.score - low) / span if span > 0 else 1.0 for c in ranking}

    lex, den = normalised(lexical), normalised(dense)
    sources = {c.chunk_id: c.source_id for c in [*lexical, *dense]}
    scores = {
        cid: dense_weight * den.get(cid, 0.0) + (1 - dense_weight) * lex.get(cid, 0.0)
        for cid in sources
    }
    ordered = sorted(scores, key=lambda cid: (-scores[cid], cid))
    return [Candidate(cid, sources[cid], scores[cid], i) for i, cid in enumerate(ordered, 1)]


# Identifier-priority levels: the query names the chunk's own file, another of its name terms
# (a folder, a past version), or the chunk's text holds a rare identifier of the query.
NAMES_FILE, NAMES_SOURCE, RARE_IDENTIFIER = 3, 2, 1


def identifier_priority(
    fused: Sequence[Candidate], passages: dict[str, Passage], identifiers: Sequence[str],
    rare: set[str] | None = None,
) -> tuple[list[Candidate], dict[str, int]]:
    """Stable re-sort: the file a query names, files under a name it names, then rare content matches.

    Levels: 3 when the chunk's own file name carries a query key (`pep-0008.rst` for
    "PEP 8"), 2 when any name term does (its folder, e.g. `keps/*/2033-*/README.md` for
    "KEP-2033", or `pep-0008.rst@<sha>`, a past version), 1 for a rare identifier in the text.
    Returns the re-sorted list and the level of each promoted chunk.

    An exact identifier in a question (a file name, an error code, an ADR number) is an
    explicit request that rank fusion cannot see: a dense ranking of `E-BRK-042` is noise,
    and RRF would let that noise outvote the one passage that contains the code. Only
    *rare* identifiers promote content matches (`rare`, by document frequency, at most
    `retrieval.rare_identifier_max_chunks` chunks): a term such as `IL-6` that hundreds
    of passages contain is ordinary vocabulary, not a request for one passage.
    """
    wanted = set(identifiers)
    if not wanted:
        return list(fused), {}
    rare_wanted = wanted if rare is None else wanted & rare

    def level(candidate: Candidate) -> int:
        passage = passages.get(candidate.chunk_id)
        if passage is None:
            return 0
        if wanted & set(file_keys(passage.source_id)):
            return NAMES_FILE
        if wanted & set(passage.name_terms):
            return NAMES_SOURCE
        return RARE_IDENTIFIER if rare_wanted & set(passage.identifiers) else 0

    levels = {c.chunk_id: level(c) for c in fused}
    ordered = sorted(fused, key=lambda c: (-levels[c.chunk_id], c.rank))
    promoted = {cid: n for cid, n in levels.items() if n > 0}
    return [Candidate(c.chunk_id, c.source_id, c.score, i) for i, c in enumerate(ordered, 1)], promoted


class Retriever:
    """Runs the retrieval stages for one index and configuration."""

    def __init__(
        self,
        conn: psycopg.Connection,
        config: Config,
        *,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.conn = conn
        self.config = config
        self.store = Store(conn, config.index)
        self.store.require()
        needs_dense = config.retrieval.dense
        self.embedder = embedder or (get_embedder(config.embedder, config.cache) if needs_dense else None)
        self.reranker = reranker if reranker is not None else get_reranker(
            config.rerank, AnswerCache.from_config(config.cache))
        self.representation_id = (
            representation_id(config, self.embedder) if self.embedder is not None else ""
        )
        if needs_dense:
            self._check_representation()
        self._lexical_conn: psycopg.Connection | None = None
        self._pool: ThreadPoolExecutor | None = None

    def _check_representation(self) -> None:
        in_use = self.store.representations_in_use()
        foreign = {rep: n for rep, n in in_use.items() if rep != self.representation_id}
        if foreign:
            detail = ", ".join(f"{rep} ({n} chunks)" for rep, n in sorted(foreign.items()))
            raise StoreError(
                f"index {self.config.index!r} holds vectors of {detail}, not of the configured "
                f"embedder {self.config.embedder.name!r} ({self.representation_id}): run "
                "`memory-baseline refresh PATH` to re-embed, or search with the index's embedder"
            )

    def retrieve(self, query: str) -> RetrievalResult:
        """Every stage of one query, all read from one snapshot of the index."""
        if not query.strip():
            raise ValueError("empty query")
        with self.store.snapshot() as snapshot_id:
            return self._retrieve(query, snapshot_id)

    def _retrieve(self, query: str, snapshot_id: str | None) -> RetrievalResult:
        settings = self.config.retrieval
        depth = settings.per_path_candidates
        stages: list[Stage] = []
        known_rows: dict[str, dict] = {}  # passage rows the paths already read
        if settings.lexical != "none" and settings.dense and snapshot_id is not None:
            # The two paths overlap: BM25 (terms, one fetch, numpy) on a second
            # connection in a worker thread, inside the snapshot this search reads
            # (so no refresh can commit between the paths), while this thread
            # encodes the query and runs the HNSW query; each stage reports its own
            # time. Inside a caller's transaction (no exported snapshot) the paths
            # run one after the other on that transaction, which sees its own writes.
            # The identifier lookups depend on the query alone, so they ride along.
            # Both paths also bring their hits' passage rows, so fusion reads no text.
            lexical_future = self._lexical_pool().submit(self._overlapped_lexical_stage, query,
                                                         snapshot_id)
            dense_stage = self._dense_stage(query, known_rows)
            lexical_stage, lookups, lexical_rows = lexical_future.result()
            known_rows.update(lexical_rows)
            stages += [lexical_stage, dense_stage]
        else:
            if settings.lexical != "none":
                stages.append(self._lexical_stage(query, self.store))
            if settings.dense:
                stages.append(self._dense_stage(query, known_rows))
            lookups = None
        rankings = [stage.candidates for stage in stages]

        if not rankings:
            raise ValueError("both retrieval paths are disabled (lexical = none, dense = false)")

        t0 = time.perf_counter()
        if len(rankings) == 1:
            fused = list(rankings[0])
            method = "single-path"
        elif settings.fusion == "rrf":
            fused = reciprocal_rank_fusion(rankings, settings.rrf_k)
            method = f"rrf(k={settings.rrf_k})"
        elif settings.fusion == "blend":
            fused = convex_blend(rankings[0], rankings[1], settings.blend_weight)
            method = f"blend(dense_weight={settings.blend_weight})"
        else:
            raise ValueError(f"unknown fusion {settings.fusion!r}: rrf or blend")
        detail = {"method": method, "per_path": {s.name: len(s.candidates) for s in stages},
                  "union_size": len(fused)}
        priority: dict[str, int] = {}
        if settings.identifier_priority:
            query_identifiers, named_hits, rare = lookups or self._identifier_lookups(query, self.store)
            named = self._named_candidates(named_hits, fused, depth)
            fused = [*fused, *named]
            passages = self._passages([c.chunk_id for c in fused], known_rows)
            fused, priority = identifier_priority(fused, passages, query_identifiers, rare)
            detail["identifier_priority"] = {"identifiers": query_identifiers,
                                             "rare": sorted(rare), "promoted": len(priority),
                                             "named_added": [c.chunk_id for c in named]}
        else:
            passages = self._passages([c.chunk_id for c in fused], known_rows)
        stages.append(Stage("fused", tuple(fused), (time.perf_counter() - t0) * 1000, detail))

        stages.append(self._rerank(query, fused, passages))
        return RetrievalResult(query, tuple(stages), passages, self.representation_id, priority)

    def _identifier_lookups(self, query: str, store: Store) -> tuple[list[str], list[Hit], set[str]]:
        """The query's identifiers, the chunks of files they name, and which of them are rare.

        Enough named chunks are read to leave `per_path_candidates` after dropping those
        both paths return (at most two paths' depth), so the lookup needs no ranking.
        """
        settings = self.config.retrieval
        identifiers = extract_identifiers(query)
        if not identifiers:
            return identifiers, [], set()
        named = store.named_chunks(identifiers, 3 * settings.per_path_candidates)
        return identifiers, named, store.rare_terms(identifiers, 0.0, settings.rare_identifier_max_chunks)

    @staticmethod
    def _named_candidates(named: Sequence[Hit], fused: Sequence[Candidate], limit: int) -> list[Candidate]:
        """Chunks of the files the query names that neither path returned, appended after them.

        A question naming "PEP 8" asks for that file even when its words match other files
        better; without this, a named file outside both paths' depth could never be admitted.
        Ranks continue after the fused list (identifier priority then moves them up).
        """
        present = {c.chunk_id for c in fused}
        hits = [h for h in named if h.chunk_id not in present][:limit]
        return [Candidate(h.chunk_id, h.source_id, 0.0, len(fused) + i) for i, h in enumerate(hits, 1)]

    def _lexical_stage(self, query: str, store: Store, *, overlapped: bool = False) -> Stage:
        settings = self.config.retrieval
        depth = settings.per_path_candidates
        t0 = time.perf_counter()
        terms = query_terms(store, query, settings.identifier_fragments)
        if settings.lexical == "bm25":
            hits = store.lexical_bm25(terms, depth, settings.bm25_k1, settings.bm25_b,
                                      settings.bm25_name_weight)
        elif settings.lexical == "tsrank-cd":
            hits = store.lexical_tsrank_cd(terms, depth)
        else:
            raise ValueError(f"unknown lexical ranker {settings.lexical!r}: bm25, tsrank-cd or none")
        lexical = _ranked(hits)
        return Stage("lexical", lexical, (time.perf_counter() - t0) * 1000,
                     {"ranker": settings.lexical, "terms": terms, "requested": depth,
                      "returned": len(lexical), "overlapped_with_dense": overlapped})

    def _dense_stage(self, query: str, rows: dict[str, dict] | None = None) -> Stage:
        """The dense path; with `rows`, its hits' passage rows are put there."""
        settings = self.config.retrieval
        depth = settings.per_path_candidates
        t0 = time.perf_counter()
        vector = self.embedder.embed_query(query)
        t_encoded = time.perf_counter()
        hits, plan = self.store.dense(
            vector, depth, self.representation_id, plan=settings.dense_plan,
            ef_search=settings.hnsw_ef_search, iterative_scan=settings.hnsw_iterative_scan,
            explain=settings.explain, passage_rows=rows,
        )
        dense = _ranked(hits)
        detail = {"plan": settings.dense_plan, "hnsw_present": self.store.has_hnsw(),
                  "ef_search": max(settings.hnsw_ef_search, depth),
                  "iterative_scan": settings.hnsw_iterative_scan, "requested": depth,
                  "returned": len(dense), "encode_ms": round((t_encoded - t0) * 1000, 3)}
        if plan is not None:
            detail["explain"] = plan
        return Stage("dense", dense, (time.perf_counter() - t0) * 1000, detail)

    def _overlapped_lexical_stage(
        self, query: str, snapshot_id: str
    ) -> tuple[Stage, tuple[list[str], list[Hit], set[str]] | None, dict[str, dict]]:
        store = self._lexical_store()
        with store.reading_snapshot(snapshot_id):
            stage = self._lexical_stage(query, store, overlapped=True)
            lookups = self._identifier_lookups(query, store) \
                if self.config.retrieval.identifier_priority else None
            ids = [c.chunk_id for c in stage.candidates]
            return stage, lookups, store.chunk_texts(ids) if ids else {}

    def _lexical_store(self) -> Store:
        """A store on a second connection to the same server, opened on first use."""
        if self._lexical_conn is None:
            info = self.conn.info
            self._lexical_conn = psycopg.connect(
                info.dsn, autocommit=True,
                **({"password": info.password} if info.password else {}))
            weakref.finalize(self, self._lexical_conn.close)
        return Store(self._lexical_conn, self.config.index)

    def _lexical_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bm25")
            weakref.finalize(self, self._pool.shutdown, wait=False)
        return self._pool

    def close(self) -> None:
        """Close the second connection and the worker thread (also done when collected)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._lexical_conn is not None:
            self._lexical_conn.close()
            self._lexical_conn = None

    def _passages(self, chunk_ids: Sequence[str],
                  known: dict[str, dict] | None = None) -> dict[str, Passage]:
        """The passages of `chunk_ids`; rows in `known` (read in the same snapshot) are not read again."""
        known = known or {}
        missing = [cid for cid in chunk_ids if cid not in known]
        fetched = self.store.chunk_texts(missing) if missing else {}
        rows = {cid: known.get(cid) or fetched[cid] for cid in chunk_ids if cid in known or cid in fetched}
        return {
            cid: Passage(
                chunk_id=cid, source_id=row["source_id"], text=row["text"], section=row["section"],
                kind=row["kind"],
                artifact_date=row["artifact_time"].date().isoformat() if row["artifact_time"] else None,
                char_start=row["char_start"], char_end=row["char_end"],
                identifiers=tuple(row["identifiers"]), name_terms=tuple(row["name_terms"]),
                line_start=row.get("line_start"), line_end=row.get("line_end"),
            )
            for cid, row in rows.items()
        }

    def _rerank(self, query: str, fused: Sequence[Candidate], passages: dict[str, Passage]) -> Stage:
        """The reranked stage; with reranker "none" it passes the fused order through."""
        settings = self.config.rerank
        t0 = time.perf_counter()
        if self.reranker.identity.get("name") == "none":
            return Stage("reranked", tuple(fused), (time.perf_counter() - t0) * 1000,
                         {"reranker": self.reranker.identity, "pass_through": True})
        head = list(fused[: settings.top_n])
        scores = self.reranker.score(query, [passages[c.chunk_id].text for c in head])
        order = sorted(range(len(head)), key=lambda i: (-scores[i], head[i].rank))
        reranked = [head[i] for i in order]
        tail = list(fused[settings.top_n:])
        ranked = tuple(
            Candidate(c.chunk_id, c.source_id, float(scores[order[i]]) if i < len(head) else c.score, i + 1)
            for i, c in enumerate([*reranked, *tail])
        )
        return Stage("reranked", ranked, (time.perf_counter() - t0) * 1000, {
            "reranker": self.reranker.identity, "pass_through": False, "top_n": len(head),
            "max_passage_tokens": settings.max_passage_tokens,
        })
