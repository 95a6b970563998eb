"""The vector cache with the real MiniLM encoder: a rebuild reads the vectors a run computed,
bit for bit, computes only new texts, and a published layer is read before the writable one."""

from __future__ import annotations

import numpy as np
import pytest

from memory_baseline import vector_cache
from memory_baseline.hashing import content_digest
from memory_baseline.vector_cache import CachedEmbedder, VectorCache

TEXTS = ["Kafka was chosen as the event store.", "The cutover was rolled back on 2024-03-02.",
         "Kafka was chosen as the event store."]


def test_second_encoding_is_served_exactly_and_only_new_text_is_computed(minilm, tmp_path, monkeypatch):
    log = tmp_path / "vectors.jsonl"
    monkeypatch.setenv(vector_cache.USAGE_LOG_ENV, str(log))
    first = CachedEmbedder(minilm, VectorCache(tmp_path / "home"))
    computed = first.embed_documents(TEXTS)
    assert computed.dtype == np.float32 and computed.shape == (3, minilm.identity.dimension)
    assert np.array_equal(computed[0], computed[2])  # one text, encoded once
    assert (first.served, first.computed) == (0, 2)

    # A new process (a new cache object) reads the files back.
    again = CachedEmbedder(minilm, VectorCache(tmp_path / "home"))
    served = again.embed_documents([*TEXTS, "A text nobody encoded before."])
    assert np.array_equal(served[:3], computed)
    assert (again.served, again.computed) == (2, 1)
    np.testing.assert_allclose(served[3], minilm.embed_documents(["A text nobody encoded before."])[0],
                               atol=1e-5)

    counts = vector_cache.usage(log)
    assert counts["computed"] == 3 and counts["from_cache"] == 2
    assert counts["used"] == {minilm.identity.key(): sorted({content_digest(t) for t in
                                                             [*TEXTS, "A text nobody encoded before."]})}


def test_export_writes_the_used_vectors_and_the_published_layer_wins(minilm, tmp_path):
    home = VectorCache(tmp_path / "home")
    vectors = CachedEmbedder(minilm, home).embed_documents(TEXTS[:2])
    key = minilm.identity.key()
    digests = [content_digest(t) for t in TEXTS[:2]]
    assert home.export({key: digests[:1]}, tmp_path / "published") == 1

    # A layer read first serves its vector even where the writable folder holds another one.
    other = VectorCache(tmp_path / "elsewhere")
    other.put(key, digests[:1], np.ones((1, minilm.identity.dimension), dtype=np.float32))
    layered = VectorCache(tmp_path / "elsewhere", read_first=[tmp_path / "published"])
    (layer, vector), = layered.get(key, digests[:1]).values()
    assert layer == str(tmp_path / "published") and np.array_equal(vector, vectors[0])

    with pytest.raises(FileNotFoundError, match="in no layer"):
        VectorCache(tmp_path / "empty").export({key: digests}, tmp_path / "out")


def test_another_identity_or_a_damaged_file_is_a_miss(minilm, tmp_path):
    cache = VectorCache(tmp_path / "home")
    CachedEmbedder(minilm, cache).embed_documents(TEXTS[:1])
    assert VectorCache(tmp_path / "home").get("mpnet-768-000000000000", [content_digest(TEXTS[0])]) == {}
    for path in (tmp_path / "home").rglob("*.npz"):
        path.write_bytes(b"not a numpy archive")
    fresh = CachedEmbedder(minilm, VectorCache(tmp_path / "home"))
    fresh.embed_documents(TEXTS[:1])
    assert (fresh.served, fresh.computed) == (0, 1)


def test_the_cache_is_off_unless_the_environment_names_a_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(vector_cache.WRITE_ENV, raising=False)
    assert VectorCache.from_environment() is None
    monkeypatch.setenv(vector_cache.WRITE_ENV, str(tmp_path / "home"))
    monkeypatch.setenv(vector_cache.READ_FIRST_ENV, str(tmp_path / "published"))
    cache = VectorCache.from_environment()
    assert cache.root == tmp_path / "home" and cache.read_first == (tmp_path / "published",)
