"""The identity of a representation: a chunker configuration plus an embedder identity.

Both the write path (refresh stores chunks under it) and the read path
(retrieval searches only chunks of the configured representation) need this
id; it lives here so that the read path does not load the write path.
"""

from __future__ import annotations

import hashlib
import json

from .chunking import chunker_identity
from .config import Config
from .embedders import Embedder, EmbedderIdentity, known_identity


def representation_id(config: Config, embedder: Embedder) -> str:
    """Stable id of (chunker configuration, embedder identity)."""
    return _identity_id(config, embedder.identity)


def expected_representation_id(config: Config) -> str:
    """The id `config` would write, without loading the encoder when its identity is known."""
    return _identity_id(config, known_identity(config.embedder))


def _identity_id(config: Config, identity: EmbedderIdentity) -> str:
    payload = {"chunker": chunker_identity(config.chunking), "embedder": identity.to_dict()}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:10]
    return f"{config.chunking.policy}-{identity.name}-{digest}"
