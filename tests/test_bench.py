"""Smoke runs of every benchmark at tiny sizes: they run, and what they report is consistent.

No timing is asserted; sizes are chosen so each test takes seconds.
"""

from __future__ import annotations

import json
import shutil
import uuid

import numpy as np
import pytest

from memory_baseline.store import Store
from memory_lab import bench


def _drop(database_url, *names):
    from memory_baseline.server import connect

    with connect(database_url) as connection:
        for name in names:
            Store(connection, name).drop()


def test_vector_model_is_deterministic_clustered_and_unit_length():
    model = bench.VectorModel(clusters=20, seed=3)
    first, again = model.sample(500, stream=1), model.sample(500, stream=1)
    assert first.shape == (500, bench.DIMENSION) and first.dtype == np.float32
    assert np.array_equal(first, again)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert not np.array_equal(first, model.sample(500, stream=2))
    stats = bench.vector_statistics(first, sample=200)
    # Clustered: a point's nearest neighbour is far closer than a random other point.
    assert stats["nearest_neighbour_cosine_p50"] > stats["random_pair_cosine_mean"] + 0.3


def test_recombined_corpus_has_the_requested_chunks_and_sources(tmp_path):
    corpus = bench.recombined_corpus(250, seed=2, workdir=tmp_path, pool_docs=40, chunks_per_source=8)
    assert len(corpus.chunks) == 250
    assert len(corpus.sources) == 32  # ceil(250 / 8)
    assert {c.source_id for c in corpus.chunks} == {s.source_id for s in corpus.sources}
    assert len({c.chunk_id for c in corpus.chunks}) == 250
    assert all(c.text and c.char_end == len(c.text) for c in corpus.chunks)
    assert corpus.queries


def test_latency_benchmark_reports_every_stage_and_the_bm25_plan(conn, database_url, tmp_path):
    prefix = f"test_bench_{uuid.uuid4().hex[:8]}"
    try:
        document = bench.bench_latency(conn, sizes=(80,), queries=6, index_prefix=prefix,
                                       progress=False)
    finally:
        _drop(database_url, f"{prefix}_80")
    entry = document["sizes"]["80"]
    assert entry["corpus"]["chunks"] == 80
    assert entry["storage"]["postings"] > 0 and entry["storage"]["bytes_per_chunk"] > 0
    for stage in ("query_terms", "lexical_bm25", "query_encoding", "lexical_tsrank_cd",
                  "dense_exact", "dense_hnsw", "fusion", "retrieve_total", "assembly"):
        assert entry["stages"][stage]["n"] == 6
        assert entry["stages"][stage]["p50_ms"] <= entry["stages"][stage]["p95_ms"]
    exact = entry["bm25"]["exact_match"]
    assert exact["queries"] == 6 and exact["identical_top_k"] == 6
    assert set(entry["bm25"]["parts"]) == {"fetch", "score_top_k", "chunk_ids"}
    plan = "\n".join(entry["bm25_fetch_plan"])
    assert "bm25_segments" in plan and "Execution Time" in plan
    encoder = document["encoder_query"]
    assert encoder["production"]["n"] == encoder["one_thread"]["n"] == 6
    assert document["machine"]["pgvector"]
    path = bench.write_result("latency", document, tmp_path, bench.FIGURES["latency"])
    assert json.loads(path.read_text())["sizes"]["80"]["queries"] == 6
    assert (tmp_path / "latency.png").stat().st_size > 0


def test_scale_benchmark_recall_is_exact_when_ef_search_covers_the_corpus(conn, database_url,
                                                                         tmp_path):
    index = f"test_bench_{uuid.uuid4().hex[:8]}"
    try:
        document = bench.bench_scale(conn, chunks=300, queries=8, ef_search=(10, 400),
                                     hybrid_ef_search=(400,), maintenance_work_mem="64MB",
                                     exact_sql_queries=2, index=index, progress=False)
    finally:
        _drop(database_url, index)
    assert document["storage"]["postings"] > 0
    assert document["bm25"]["exact_match"]["identical_top_k"] == 8
    assert [p["ef_search"] for p in document["curve"]] == [10, 400]
    for point in document["curve"]:
        assert 0.0 <= point["recall_at_10"] <= 1.0
        assert point["dense_top10"]["n"] == 8
    assert "hybrid" not in document["curve"][0]
    assert document["curve"][-1]["hybrid"]["n"] == 8
    # With ef_search above the corpus size the graph search visits every vector.
    assert document["curve"][-1]["recall_at_10"] == 1.0
    assert not Store(conn, index).exists()
    bench.write_result("scale", document, tmp_path, bench.FIGURES["scale"])
    assert (tmp_path / "scale.png").stat().st_size > 0


def test_ingest_benchmark_embeds_exactly_the_chunks_sync_writes(conn, tmp_path):
    index = f"test_bench_{uuid.uuid4().hex[:8]}"
    document = bench.bench_ingest(conn, docs=20, repeats=1, index=index, progress=False)
    assert not Store(conn, index).exists()
    assert document["chunks"] == document["chunks_stored"] > 0
    assert document["ratio"] > 0
    assert {r["step"] for r in document["runs"]} == {"sync", "encode"}
    assert set(document["phases_median_seconds"]) >= {"discover", "chunk", "embed", "write", "index"}
    bench.write_result("ingest", document, tmp_path, bench.FIGURES["ingest"])
    assert (tmp_path / "ingest.png").stat().st_size > 0


def test_scifact_wrapper_runs_on_a_tiny_beir_folder(conn, database_url, tmp_path):
    from memory_lab.corpora import beir

    name = f"tinybeir_{uuid.uuid4().hex[:6]}"
    root = tmp_path / name
    (root / "qrels").mkdir(parents=True)
    docs = {"d1": "Vitamin D deficiency raises fracture risk in older adults.",
            "d2": "Statins lower LDL cholesterol and cardiovascular events.",
            "d3": "Aspirin reduces platelet aggregation."}
    (root / "corpus.jsonl").write_text("\n".join(
        json.dumps({"_id": k, "title": "", "text": v}) for k, v in docs.items()) + "\n")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in (
        {"_id": "q1", "text": "vitamin D and fractures"},
        {"_id": "q2", "text": "statins cholesterol"})) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    try:
        document = bench.bench_scifact(conn, beir_dir=root, conditions=("lexical-bm25",),
                                       runs_root=tmp_path / "runs", progress=False)
    finally:
        _drop(database_url, f"beir_{name}")
        shutil.rmtree(beir.beir_home(name), ignore_errors=True)
    assert [row["condition"] for row in document["table"]] == ["lexical-bm25"]
    assert document["table"][0]["nDCG@10"] == pytest.approx(1.0)
    assert document["bm25_stage_top100"]["n"] == 2
    bench.write_result("scifact", document, tmp_path, bench.FIGURES["scifact"])
    assert (tmp_path / "scifact.png").stat().st_size > 0


def test_bad_benchmark_arguments_are_one_line_errors(conn):
    with pytest.raises(bench.BenchError):
        bench.int_list("10,x")
    with pytest.raises(bench.BenchError):
        bench.bench_scale(conn, chunks=10)
    assert bench.main(["latency", "--sizes", "ten"]) == 2
