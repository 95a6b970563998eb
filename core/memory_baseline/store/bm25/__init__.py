"""Okapi BM25 over per-term posting arrays: the SQL that reads and compacts them, and the scoring.

Why arrays. Summing every posting of every query term in SQL, one row per
posting, cost p95 230 ms at 100k chunks and seconds at 1M (a stemmed word
such as ``servic`` is in almost half of the chunks). Holding each term's
postings as one ``bytea`` value, fetched for all query terms in one binary
statement and scored with numpy, returns the same top-k an order of magnitude
faster (the measured designs: the anchors in ANCHORS.md beside the project; our
own figures are in ``benchmarks/results/latency.json`` and ``scale.json``).
A side index outside PostgreSQL (tantivy) is faster still, but would no longer
be transactional with the chunks; these arrays are written by the same
statement-level triggers, in the same transaction, as the chunk rows.

Statistics. Document frequencies and corpus size come from ``term_stats`` and
``corpus_stats`` (the trigger-maintained statistics, the source of truth),
read in the same statement and snapshot as the arrays; a posting carries its
chunk's length, which never changes (chunk rows are immutable).

One module per job:

- `postings`: the 8-byte posting format, decoded columns, and the cache of
  large decoded segments kept between queries;
- `search`: the query's terms, the one-statement fetch, `lexical_bm25` (and
  the ``ts_rank_cd`` comparison), lookups by name and by rarity;
- `scoring`: exact top-k with numpy (MaxScore);
- `segments`: compaction of delta segments and tombstones, and the checks
  `health` runs;
- `reference`: the exhaustive SQL the arrays are tested against.
"""

from .postings import (
    MAX_LENGTH,
    MAX_TF,
    POSTING,
    Columns,
    Fetched,
    SegmentCache,
    TermPostings,
    columns,
    decode,
    encode,
)
from .reference import Reference
from .scoring import idf, top_k
from .search import Lexical, query_terms, tsquery_from_terms
from .segments import Compaction, SegmentCheck, check_segments, merge_segments

__all__ = [
    "MAX_LENGTH", "MAX_TF", "POSTING", "Columns", "Compaction", "Fetched", "Lexical", "Reference",
    "SegmentCache", "SegmentCheck", "TermPostings", "check_segments", "columns", "decode", "encode",
    "idf", "merge_segments", "query_terms", "top_k", "tsquery_from_terms",
]
