"""The public API: `open_memory` and the `Memory` handle, on the real server and models.

The README's "Use from Python" example is run as written (only its index name is
made unique), so the documented five lines cannot drift from the code.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Use from Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_has_one_import_line_and_five_lines():
    lines = [line for line in readme_example().splitlines() if line.strip()]
    assert [line for line in lines if line.startswith(("import ", "from "))] == [
        "from memory_baseline import open_memory"]
    assert len(lines) == 5


def test_importing_the_package_loads_no_lab_no_instrument_and_no_heavy_module():
    probe = ("import sys, memory_baseline; from memory_baseline import open_memory, Config; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('memory_lab', 'memory_instrument', 'torch', 'psycopg', 'numpy', 'xllamacpp')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            cwd=REPO).stdout.strip()
    assert loaded == "[]"


def test_the_whole_pipeline_imports_only_the_citation_grammar_of_the_instrument():
    probe = ("import sys; import memory_baseline.baseline, memory_baseline.refresh, "
             "memory_baseline.health, memory_baseline.cli; "
             "print(sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('memory_lab', 'memory_instrument')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            cwd=REPO).stdout.strip()
    assert loaded == "['memory_instrument', 'memory_instrument.citations']"


def test_public_names_are_the_documented_ones():
    import memory_baseline

    assert sorted(memory_baseline.__all__) == sorted(
        ["AskResult", "Config", "ConfigError", "HealthReport", "Memory", "Search", "SyncReport",
         "__version__", "open_memory"])
    for name in memory_baseline.__all__:
        assert getattr(memory_baseline, name) is not None
    with pytest.raises(AttributeError):
        memory_baseline.Retriever  # noqa: B018 - the stages are not the public API


def test_search_ask_health_and_close_through_the_handle(index_name):
    from memory_baseline import open_memory

    with open_memory(index_name, reader={"name": "extractive"}) as memory:
        report = memory.refresh(REPO / "fixtures" / "history")
        assert report.added and not report.failed_observations
        found = memory.search("Where is the error code E-BRK-042 explained?")
        assert found.passages[0].source_id == "docs/runbooks/broker-errors.md"
        result = memory.ask("What event store should new services use?", as_of="2024-10-07")
        assert result.text == result.answer.text and result.citations == result.answer.citations
        assert set(result.citations) <= {p.source_id for p in result.passages}
        assert memory.health().ok
        retriever = memory._pipeline().retriever
        retriever.retrieve("snapshot")  # opens the lexical connection and its thread
    assert memory._conn is None and retriever._lexical_conn is None and retriever._pool is None


def test_a_closed_handle_reopens_its_connection(index_name):
    from memory_baseline import open_memory

    memory = open_memory(index_name, reader={"name": "extractive"})
    memory.ingest(REPO / "fixtures" / "history")
    memory.connection.close()  # as if the server had dropped us
    assert memory.search("E-BRK-042").passages
    memory.close()


def test_bad_input_is_a_clear_error(index_name, tmp_path):
    from memory_baseline import ConfigError, open_memory

    with pytest.raises(ConfigError, match="invalid index name"):
        open_memory("Not A Name")
    with pytest.raises(ConfigError, match="unknown configuration section"):
        open_memory(index_name, readers={"name": "extractive"})
    with open_memory(index_name) as memory, pytest.raises(ValueError, match="is not a directory"):
        memory.refresh(tmp_path / "missing")


@pytest.mark.slow
def test_the_readme_example_runs_as_written(index_name, monkeypatch):
    """The default reader (qwen-1.5b) answers; a minute on 2 cores."""
    monkeypatch.chdir(REPO)
    code = readme_example().replace('open_memory("demo")', f'open_memory("{index_name}")')
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})
    text, citations = printed.getvalue().rsplit(" (", 1)
    assert "postgres" in text.lower()  # the decision of ADR-007 (sqlite was the first release's)
    assert citations.strip().startswith("'")  # it cites admitted sources


def test_cache_switches_are_configuration_recorded_in_every_run(monkeypatch, tmp_path):
    from memory_baseline import Config
    from memory_baseline.answer_cache import AnswerCache, CacheOnlyError

    monkeypatch.setenv("MEMORY_BASELINE_ANSWER_CACHE_PATH", f"{tmp_path}/a:{tmp_path}/b")
    monkeypatch.setenv("MEMORY_BASELINE_ANSWER_CACHE_ONLY", "1")
    from_environment = Config()
    assert from_environment.cache.answers_read_first == (f"{tmp_path}/a", f"{tmp_path}/b")
    assert from_environment.to_dict()["cache"]["answers_only"] is True
    toml = tmp_path / "memory.toml"
    toml.write_text('[cache]\nanswers_read_first = ["layer"]\nanswers_only = false\n', encoding="utf-8")
    loaded = Config.load(toml)
    assert loaded.cache.answers_read_first == ("layer",) and loaded.cache.answers_only is False
    cache = AnswerCache(tmp_path / "root", read_first=(), cache_only=True)
    monkeypatch.delenv("MEMORY_BASELINE_ANSWER_CACHE_ONLY")
    with pytest.raises(CacheOnlyError, match="cache.answers_only"):
        cache.before_computing("k" * 64)
    AnswerCache.from_config(loaded.cache).before_computing("k" * 64)  # computing allowed
