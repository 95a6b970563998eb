"""Shared fixtures: the real embedded PostgreSQL server and real models.

Each test gets its own index (PostgreSQL schema) on the one server, dropped
afterwards, so tests never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

# Never reach a model hub from tests; all weights come from installed packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
FIXTURE_HISTORY = REPO / "fixtures" / "history"
FIXTURE_TASKS = REPO / "fixtures" / "tasks.json"


@pytest.fixture(scope="session")
def database_url() -> str:
    from memory_baseline.server import database_url as url

    return url()


@pytest.fixture()
def conn(database_url):
    from memory_baseline.server import connect

    with connect(database_url) as connection:
        yield connection


@pytest.fixture()
def index_name(database_url):
    from memory_baseline.server import connect
    from memory_baseline.store import Store

    name = f"test_{uuid.uuid4().hex[:10]}"
    yield name
    with connect(database_url) as connection:
        Store(connection, name).drop()


@pytest.fixture()
def config(index_name):
    from memory_baseline.config import Config

    return Config(index=index_name)


@pytest.fixture(scope="session")
def minilm():
    from memory_baseline.config import EmbedderConfig
    from memory_baseline.embedders import get_embedder

    return get_embedder(EmbedderConfig())
