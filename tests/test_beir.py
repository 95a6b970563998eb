"""BEIR-format evaluation on a tiny dataset written in a temporary folder."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

DOCS = {
    "d1": ("Photosynthesis", "Plants convert light into chemical energy in chloroplasts."),
    "d2": ("Cardiac output", "The heart pumps blood; stroke volume and heart rate set the output."),
    "d3": ("Orchid flowers", "Zygomorphic flowers are bilaterally symmetric, as in many orchids."),
    "d4": ("Insulin", "Insulin lowers blood glucose by promoting uptake into muscle and fat."),
    "d5": ("Vaccines", "Vaccination trains the immune system to recognise a pathogen."),
    "d6": ("Plate tectonics", "Continents drift on plates that move over the mantle."),
    "d7": ("Ocean tides", "Tides rise and fall because of the gravity of the moon and sun."),
    "d8": ("Antibiotic resistance", "Bacteria evolve resistance when antibiotics are overused."),
    "d9": ("Sleep", "Deep sleep consolidates memories formed during the day."),
    "doc/10": ("Coral reefs", "Warm water bleaches coral when symbiotic algae are expelled."),
}
QUERIES = {
    "q1": "which flowers are zygomorphic",
    "q2": "how does insulin affect blood sugar",
    "q3": "why do corals bleach in warm water",
    "t1": "what moves the continents",
    "t2": "what causes tides",
    "t3": "how do bacteria become resistant",
}
TEST_QRELS = {"q1": "d3", "q2": "d4", "q3": "doc/10"}
TRAIN_QRELS = {"t1": "d6", "t2": "d7", "t3": "d8"}


def _write_dataset(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for doc_id, (title, text) in DOCS.items():
            handle.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for query_id, text in QUERIES.items():
            handle.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    for split, qrels in (("test", TEST_QRELS), ("train", TRAIN_QRELS)):
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t1" for q, d in qrels.items()]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture()
def tiny_beir(tmp_path, monkeypatch, database_url):
    from memory_baseline.server import connect
    from memory_baseline.store import Store

    # Materialised documents go under the memory home; keep them in the test's folder.
    monkeypatch.setenv("MEMORY_BASELINE_HOME", str(tmp_path / "home"))
    name = f"tiny{uuid.uuid4().hex[:8]}"
    root = _write_dataset(tmp_path / f"beir-{name}")
    yield root, name
    with connect(database_url) as connection:
        Store(connection, f"beir_{name}").drop()


def test_beir_run_writes_trec_files_and_ir_measures_metrics(conn, tiny_beir, tmp_path):
    import ir_measures
    from ir_measures import RR, R, nDCG

    from memory_baseline.config import Config
    from memory_lab.corpora.beir import doc_file_name, run_beir

    root, name = tiny_beir
    conditions = ["lexical-bm25", "lexical-tsrank-cd", "dense", "hybrid-bm25", "hybrid-bm25-blend"]
    document = run_beir(conn, Config(), root, conditions, runs_root=tmp_path / "runs", depth=5,
                        progress=False)
    run_dir = Path(document["run_dir"])
    assert document["index"] == f"beir_{name}" and document["queries"] == 3
    assert json.loads((run_dir / "beir.json").read_text())["conditions"].keys() == \
        document["conditions"].keys()
    # Hybrids are reported at the pipeline's per-path depth and at `depth`.
    expected = set(conditions) | {"hybrid-bm25@5", "hybrid-bm25-blend@5"}
    assert set(document["conditions"]) == expected
    assert document["tuning"]["blend"]["chosen_dense_weight"] in document["tuning"]["blend"]["grid"]

    qrels = {q: {d: 1} for q, d in TEST_QRELS.items()}
    for label, result in document["conditions"].items():
        trec = run_dir / f"{label}.trec"
        assert trec.is_file()
        run = list(ir_measures.read_trec_run(str(trec)))
        recomputed = ir_measures.calc_aggregate([nDCG @ 10, R @ 100, RR @ 10], qrels, run)
        assert result["metrics"] == {str(m): round(float(v), 4) for m, v in recomputed.items()}
        assert result["latency"]["p95_ms"] >= result["latency"]["p50_ms"] > 0

    # The rare word finds its document first; an unsafe id survives the file mapping.
    first = {}
    for line in (run_dir / "lexical-bm25.trec").read_text().splitlines():
        qid, _, doc, rank, _, _ = line.split()
        if rank == "1":
            first[qid] = doc
    assert first["q1"] == "d3"
    assert document["conditions"]["lexical-bm25"]["metrics"]["RR@10"] > 0.5
    assert doc_file_name("doc/10") != "doc/10 x.txt"
    id_map = json.loads((tmp_path / "home" / "beir" / name / "doc_ids.json").read_text())
    assert id_map[doc_file_name("doc/10")] == "doc/10"


def test_beir_refuses_unknown_conditions_and_tuning_on_test(conn, tiny_beir, tmp_path):
    from memory_baseline.config import Config
    from memory_lab.corpora.beir import BeirError, beir_condition_config, run_beir

    root, _ = tiny_beir
    with pytest.raises(BeirError, match="unknown BEIR condition"):
        run_beir(conn, Config(), root, ["bm42"], runs_root=tmp_path / "runs", progress=False)
    with pytest.raises(BeirError, match="needs a real reranker"):
        beir_condition_config("hybrid-reranked", Config(), depth=100, reranker_name="none")
    with pytest.raises(BeirError, match="tuned on the dev split"):
        beir_condition_config("hybrid-bm25-blend", Config(), depth=100)
