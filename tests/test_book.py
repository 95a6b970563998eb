"""The book: chapters as MyST notebooks built from the very files JupyterLab saves, a consistent
table of contents and profiles, tables as scrolling DataFrames, chapter 1 executing through
Papermill, and the measures the chapters rely on."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

from memory_baseline.context import ContextTrace
from memory_baseline.hashing import file_digest
from memory_baseline.passages import Passage
from memory_baseline.retrieval import Candidate, RetrievalResult, Stage
from memory_instrument import AnswerSpec, EvidenceSpan, Task
from memory_lab import runs
from memory_lab.book import build as book
from memory_lab.chapters.chunking import evidence_coverage
from memory_lab.chapters.failures import diagnose_case, loss_stage
from memory_lab.chapters.ingest import _union_length
from memory_lab.studies.display import pivot, table_frame, table_html
from memory_lab.studies.setup import display_path, repo_path, start_study

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = book.notebook_sources(REPO)


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def test_chapters_are_numbered_in_order():
    assert [p.stem[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(1, len(NOTEBOOKS) + 1)]
    assert len(NOTEBOOKS) == 11


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_is_a_myst_notebook_with_title_parameters_and_one_setup_call(path):
    """Each chapter is jupytext MyST Markdown that reads as a notebook: a title, then the
    `parameters` cell, then the setup cell calling the one shared helper; no outputs."""
    assert jupytext.formats.guess_format(path.read_text(encoding="utf-8"), ".md")[0] == "myst"
    notebook = book.read_chapter(path, REPO)
    nbformat.validate(notebook)
    assert notebook.cells[0].cell_type == "markdown" and notebook.cells[0].source.startswith("# ")
    assert "parameters" in _tags(notebook.cells[1]), "the cell after the title must be `parameters`"
    assert sum("parameters" in _tags(c) for c in notebook.cells) == 1
    assert "PARAMETERS, conn = chapter.setup(globals())" in notebook.cells[2].source
    assert notebook.metadata.kernelspec.name == book.KERNEL_NAME
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    assert "runs_root" in book.declared_parameters(path)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_is_the_file_jupyterlab_saves(path):
    """What jupytext writes when JupyterLab saves the notebook is the committed file itself,
    byte for byte: there is no generator or second copy for an edit to be lost in."""
    text = path.read_text(encoding="utf-8")
    assert jupytext.writes(jupytext.reads(text, fmt="md:myst"), fmt="md:myst") == text


def test_the_build_executes_the_chapter_file_itself(tmp_path):
    """The notebook Papermill runs is converted from the committed Markdown at build time and
    names it: its path and SHA-256 travel into the executed chapter's metadata."""
    source = NOTEBOOKS[0]
    converted = book.convert_chapter(source, tmp_path / "01.ipynb", REPO)
    notebook = nbformat.read(converted, as_version=4)
    assert notebook.metadata.memory_lab == {"source": "notebooks/01_ingest.md",
                                            "sha256": file_digest(source)}
    assert [c.source for c in notebook.cells] == [c.source for c in jupytext.read(source).cells]
    assert [c.id for c in notebook.cells][:3] == ["01-00", "01-01", "01-02"]
    assert "jupytext" not in notebook.metadata
    assert not list((REPO / "notebooks").glob("*.ipynb")), "no .ipynb copies of the chapters"
    assert not (REPO / "notebooks" / "_build_notebooks.py").exists()


def test_a_file_that_is_not_a_chapter_is_refused(tmp_path):
    text = NOTEBOOKS[0].read_text(encoding="utf-8").replace(":tags: [parameters]\n", "")
    (tmp_path / "01_x.md").write_text(text, encoding="utf-8")
    with pytest.raises(book.BookError, match="exactly one code cell tagged `parameters`"):
        book.read_chapter(tmp_path / "01_x.md", tmp_path)
    other = NOTEBOOKS[0].read_text(encoding="utf-8").replace("name: memory-baseline", "name: python3")
    (tmp_path / "02_x.md").write_text(other, encoding="utf-8")
    with pytest.raises(book.BookError, match="kernelspec"):
        book.read_chapter(tmp_path / "02_x.md", tmp_path)


def test_every_code_cell_is_folded_in_the_book_unless_removed(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# t"), nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("y = 2", metadata={"tags": ["remove-input"]}),
        nbformat.v4.new_code_cell("z = 3", metadata={"tags": ["parameters"]})])
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook, path)
    book.hide_inputs(path)
    tags = [_tags(c) for c in nbformat.read(path, as_version=4).cells]
    assert tags == [[], ["hide-input"], ["remove-input"], ["parameters", "hide-input"]]


def test_the_book_root_comes_from_the_working_directory_not_the_install(tmp_path, monkeypatch):
    from memory_lab.book import paths

    root = tmp_path / "mybook"
    (root / "book" / "chapters").mkdir(parents=True)
    for marker in paths.BOOK_MARKERS:
        (root / marker).write_text("", encoding="utf-8")
    monkeypatch.delenv(paths.ROOT_ENV, raising=False)
    monkeypatch.chdir(root / "book" / "chapters")
    assert paths.project_root() == root.resolve()
    assert repo_path("fixtures/history") == root.resolve() / "fixtures" / "history"
    assert display_path(root / "runs" / "x") == "runs/x"
    assert book.chapters_dir() == root.resolve() / "book" / "chapters"
    monkeypatch.chdir(tmp_path)
    assert paths.project_root() == tmp_path.resolve()     # no book above: the working directory
    with pytest.raises(book.BookError, match="not a book root"):
        book.book("smoke", execute=False, build=False)
    monkeypatch.setenv(paths.ROOT_ENV, str(root))
    assert paths.project_root() == root.resolve()


def test_tables_are_dataframes_pivoted_formatted_and_scrolling():
    rows = [{"condition": "hybrid", "question_type": "locate", "pass_rate": 0.5, "n": 4},
            {"condition": "hybrid", "question_type": "all", "pass_rate": 0.25, "n": 8},
            {"condition": "lexical", "question_type": "temporal", "pass_rate": 1.0, "n": 2},
            {"condition": "lexical", "question_type": "locate", "pass_rate": None, "n": None}]
    frame = table_frame(rows)
    assert list(frame.columns) == ["condition", "question_type", "pass_rate", "n"]
    assert frame["n"].tolist() == [4, 8, 2, None]          # integers stay integers, gaps stay None
    wide = pivot(rows, index="condition", columns="question_type", values="pass_rate",
                             row_order=["no-memory", "lexical", "hybrid"], column_order=["temporal"])
    assert list(wide.columns) == ["temporal", "locate", "all"]
    assert wide.loc["hybrid"].tolist() == [None, 0.5, 0.25]
    assert wide.loc["no-memory"].tolist() == [None, None, None]
    html = table_html(wide)
    assert html.startswith('<div class="memory-table-scroll">')
    assert ">0.500<" in html and ">–<" in html and ">hybrid<" in html and "id=" not in html
    assert table_html(frame) == table_html(table_frame(rows))
    assert ">4<" in table_html(frame) and ">0<" not in table_html(frame)
    with pytest.raises(ValueError):
        pivot(rows + [rows[0]], index="condition", columns="question_type", values="pass_rate")
    css = (REPO / "_static" / "tables.css").read_text(encoding="utf-8")
    assert ".memory-table-scroll" in css and "overflow-x: auto" in css


def test_every_notebook_and_page_is_in_the_toc():
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    chapters = [f for f in files if f.startswith("book/chapters/")]
    assert chapters == [f"book/chapters/{p.stem}" for p in NOTEBOOKS]
    for page in (f for f in files if not f.startswith("book/chapters/")):
        assert (REPO / f"{page}.md").is_file(), f"{page}.md in _toc.yml does not exist"
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] == "off"


@pytest.mark.parametrize("profile", book.PROFILES)
def test_profiles_only_set_declared_parameters(profile):
    _, settings = book.load_profile(profile, REPO)
    book.known_tables(settings, NOTEBOOKS)
    for notebook in NOTEBOOKS:
        book.parameters_for(notebook, settings)  # raises on a name the notebook does not declare


def test_profile_typo_and_unknown_notebook_are_errors():
    with pytest.raises(book.BookError, match="declares only"):
        book.parameters_for(NOTEBOOKS[0], {"01_ingest": {"corpus_dri": "x"}})
    with pytest.raises(book.BookError, match="names no single notebook"):
        book.select_notebooks(NOTEBOOKS, "99_nothing")
    assert book.select_notebooks(NOTEBOOKS, "embeddings")[0].stem == "03_embeddings"
    with pytest.raises(book.BookError, match="no profile"):
        book.load_profile("no-such-profile", REPO)


def test_chapter_one_executes_with_smoke_parameters(tmp_path, index_name):
    """Papermill runs chapter 1 end to end on the fixture; its run directory is complete."""
    _, settings = book.load_profile("smoke", REPO)
    parameters = book.parameters_for(NOTEBOOKS[0], settings)
    runs_root = tmp_path / "runs"
    parameters.update(index_name=index_name, runs_root=str(runs_root))
    source = book.convert_chapter(NOTEBOOKS[0], tmp_path / "in" / "01_ingest.ipynb", REPO)
    output = tmp_path / "out" / "01_ingest.ipynb"
    book.execute_notebook(source, output, parameters, progress=False, repo=REPO)

    executed = nbformat.read(output, as_version=4)
    assert executed.metadata.memory_lab["sha256"] == file_digest(NOTEBOOKS[0])
    assert all("hide-input" in _tags(c) for c in executed.cells if c.cell_type == "code")
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure was produced"
    (run_dir,) = runs_root.glob("ingest-*")
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["healthy"] is True
    assert manifest["parameters"]["index_name"] == index_name
    markdown = "".join(o["data"].get("text/markdown", "") for o in outputs if "data" in o)
    assert f"Source: run `{run_dir.resolve()}`" in markdown, "captions must name the run directory"
    tables = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert tables and all(t.startswith('<div class="memory-table-scroll">') for t in tables)


def test_cached_only_reaches_the_kernel_and_is_undone_after(tmp_path, monkeypatch):
    from memory_baseline.answer_cache import CACHE_ONLY_ENV, USAGE_LOG_ENV

    monkeypatch.delenv(CACHE_ONLY_ENV, raising=False)
    with book._kernel_environment(REPO, tmp_path / "log.jsonl", cached_only=True):
        assert os.environ[CACHE_ONLY_ENV] == "1" and os.environ[USAGE_LOG_ENV] == str(tmp_path / "log.jsonl")
    assert CACHE_ONLY_ENV not in os.environ
    with book._kernel_environment(REPO, tmp_path / "log.jsonl"):
        assert CACHE_ONLY_ENV not in os.environ


# -- the measures behind the chapters ---------------------------------------------------------


def _task(evidence: list[tuple[str, str]], expected: tuple[str, ...]) -> Task:
    return Task(id="t", question_type="provenance", query="why?", as_of=None, expected_sources=expected,
                answer=AnswerSpec(must_include=(), must_not_include=(), abstain=False,
                                  evidenced_negative=False,
                                  evidence=tuple(EvidenceSpan(s, q) for s, q in evidence)))


def test_evidence_is_covered_only_when_it_arrives_whole():
    text = "The decision. " + "filler " * 20 + "The reason: 18 outages in one month."
    quote = "18 outages in one month"
    start = text.index(quote)
    task = _task([("a.md", quote)], ("a.md",))
    texts = {"a.md": text}
    assert evidence_coverage(task, {"a.md": [(0, start + 5)]}, texts) == 0.0
    # Two adjacent passages together hold the quote: it reached the reader.
    assert evidence_coverage(task, {"a.md": [(0, start + 5), (start + 5, len(text))]},
                                         texts) == 1.0
    assert evidence_coverage(task, {"b.md": [(0, len(text))]}, texts) == 0.0
    assert _union_length([(0, 10), (5, 15), (20, 25)]) == 20


def _trace(fused_sources: list[str], admitted: list[str], not_considered: list[str],
           lexical: list[str]) -> tuple[RetrievalResult, ContextTrace]:
    def stage(name: str, sources: list[str], **detail) -> Stage:
        return Stage(name, tuple(Candidate(f"{s}#0", s, 1.0, i) for i, s in enumerate(sources, 1)), 0.0,
                     detail)

    passages = {f"{s}#0": Passage(f"{s}#0", s, "text", None, "markdown", None, char_start=0, char_end=4)
                for s in fused_sources}
    stages = (stage("lexical", lexical), stage("dense", []), stage("fused", fused_sources),
              stage("reranked", fused_sources, pass_through=True))
    context = ContextTrace(
        admitted=tuple(Passage(f"{s}#0", s, "text", None, "markdown", None, 1) for s in admitted),
        duplicate_drops=(), budget_drops=(), quota_drops=(),
        not_considered=tuple(f"{s}#0" for s in not_considered), truncated=None, prompt_tokens=10,
        token_budget=100, max_passages=1, order="rank", oversize_policy="truncate", tokenizer="t")
    return RetrievalResult("q", stages, passages, "rep"), context


def test_loss_stage_follows_the_trace():
    retrieval, context = _trace(["a.md", "b.md"], ["a.md"], ["b.md"], ["a.md", "b.md"])
    indexed = {"a.md", "b.md", "c.md"}
    assert loss_stage("a.md", indexed, retrieval, context, rerank_top_n=20) == \
        "admitted but misread"
    assert loss_stage("b.md", indexed, retrieval, context, rerank_top_n=20) == "fused out"
    assert loss_stage("c.md", indexed, retrieval, context, rerank_top_n=20) == "not a candidate"
    assert loss_stage("d.md", indexed, retrieval, context, rerank_top_n=20) == "never indexed"
    task = _task([], ("a.md", "c.md"))
    diagnosis = diagnose_case(task, False, indexed, retrieval, context, rerank_top_n=20)
    assert diagnosis["stage"] == "not a candidate"  # the earliest loss decides


def test_study_run_directory_is_fresh_and_complete(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("hello", encoding="utf-8")
    first = start_study(tmp_path / "runs", "demo", {"x": 1}, corpora={"c": corpus})
    second = start_study(tmp_path / "runs", "demo", {"x": 1}, corpora={"c": corpus})
    assert first.run_dir != second.run_dir
    first.write_rows("table", [{"a": 1, "b": [1, 2]}, {"a": 2, "c": None}])
    first.finish(note="done")
    manifest = json.loads(first.manifest_path.read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["tables"] == ["table.csv"]
    assert manifest["corpora"]["c"]["digest"] == runs.corpus_digest(corpus)
    assert (first.run_dir / "table.csv").read_text(encoding="utf-8").splitlines()[0] == "a,b,c"
    assert first.run_dir.name in first.caption("Table 1")


def _fake_repo(tmp_path: Path, profile: str, caption_run: str) -> Path:
    """A repository layout with the real chapter sources and one executed chapter per source."""
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    chapters = book.chapters_dir(repo)
    chapters.mkdir(parents=True)
    entries = {}
    for source in NOTEBOOKS:
        (repo / "notebooks" / source.name).write_bytes(source.read_bytes())
        executed = book.read_chapter(source, REPO)
        executed.cells.append(nbformat.v4.new_markdown_cell(f"*Figure: x. Source: run `{caption_run}` "
                                                            "(`manifest.json` there).*"))
        nbformat.write(executed, chapters / f"{source.stem}.ipynb")
        entries[source.stem] = {"profile": profile, "seconds": 1.0, "parameters": {}}
    (chapters / book.EXECUTION_LOG).write_text(json.dumps({"chapters": entries}), encoding="utf-8")
    _commit_all(repo)
    return repo


def _commit_all(repo: Path) -> None:
    """Publishing needs a committed tree, so the fake repository is one."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fixture"], cwd=repo, check=True)


def test_publish_from_a_dirty_tree_is_refused_before_anything_runs(tmp_path):
    repo = _fake_repo(tmp_path, "full", "runs/book/ingest-x")
    (repo / "notebooks" / NOTEBOOKS[0].name).write_text("changed", encoding="utf-8")
    with pytest.raises(book.DirtyTreeError, match="clean tree: 1 tracked file"):
        book.publish("full", repo)
    with pytest.raises(book.DirtyTreeError):
        book.book(profile="full", publish_after=True, progress=False, repo=repo)
    assert issubclass(book.DirtyTreeError, ValueError)  # the CLI's bad-input class: exit 2


def test_publish_copies_chapters_and_the_runs_they_name_then_installs_them(tmp_path):
    repo = _fake_repo(tmp_path, "full", "runs/book/ingest-x")
    with pytest.raises(book.BookError, match="not here: runs/book/ingest-x"):
        book.publish("full", repo)
    run = repo / "runs" / "book" / "ingest-x"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}", encoding="utf-8")
    (run / "summary.csv").write_text("a\n1\n", encoding="utf-8")
    target = book.publish("full", repo)
    assert (target / "runs/book/ingest-x/summary.csv").read_text(encoding="utf-8") == "a\n1\n"
    log = json.loads((target / book.EXECUTION_LOG).read_text(encoding="utf-8"))
    assert log["profile"] == "full" and log["runs"] == ["runs/book/ingest-x"]
    for notebook in book.chapters_dir(repo).glob("*.ipynb"):
        notebook.unlink()
    installed = book.install_published(repo)
    assert [p.stem for p in installed] == [p.stem for p in NOTEBOOKS]
    assert all(p.suffix == ".ipynb" for p in installed)
    folded = nbformat.read(installed[0], as_version=4)
    assert all("hide-input" in _tags(c) for c in folded.cells if c.cell_type == "code")


def test_publish_exports_the_document_vectors_the_chapters_used(tmp_path, monkeypatch):
    import numpy as np

    from memory_baseline import vector_cache

    monkeypatch.setenv("MEMORY_BASELINE_HOME", str(tmp_path / "home"))
    repo = _fake_repo(tmp_path, "full", "runs/book/ingest-x")
    run = repo / "runs" / "book" / "ingest-x"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}", encoding="utf-8")
    home = vector_cache.VectorCache(tmp_path / "home" / "vector-cache")
    home.put("minilm-384-abc", ["d1", "d2"], np.eye(2, 384, dtype=np.float32))
    (book.chapters_dir(repo) / book.VECTOR_LOG).write_text(
        '{"embedder": "minilm-384-abc", "served": {}, "computed": ["d2"]}\n', encoding="utf-8")
    target = book.publish("full", repo)
    published = vector_cache.VectorCache(tmp_path / "nowhere", read_first=[target / "vector-cache"])
    assert list(published.get("minilm-384-abc", ["d1", "d2"])) == ["d2"]
    assert np.array_equal(published.get("minilm-384-abc", ["d2"])["d2"][1], np.eye(2, 384)[1])


def test_republishing_one_chapter_keeps_the_answers_and_vectors_of_the_chapters_installed_as_published(
        tmp_path, monkeypatch):
    """`book --only 07 --publish` on a fresh clone: the other chapters come from book/published and
    log nothing, so their committed answers and vectors must survive the new publication."""
    import numpy as np

    from memory_baseline import vector_cache
    from memory_baseline.answer_cache import AnswerCache

    monkeypatch.setenv("MEMORY_BASELINE_HOME", str(tmp_path / "home"))
    repo = _fake_repo(tmp_path, "full", "runs/book/ingest-x")
    run = repo / "runs" / "book" / "ingest-x"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}", encoding="utf-8")
    home = AnswerCache(tmp_path / "home" / "answer-cache")
    vectors = vector_cache.VectorCache(tmp_path / "home" / "vector-cache")
    chapters = book.chapters_dir(repo)

    def used(key: str, digest: str) -> None:
        home.put(key, "prompt", {"reader": {"name": "r"}, "generation": {"raw_text": key}})
        vectors.put("minilm-384-abc", [digest], np.ones((1, 384), dtype=np.float32))
        (chapters / book.ANSWER_LOG).write_text(json.dumps({"event": "computed", "key": key, "layer": None})
                                                + "\n", encoding="utf-8")
        (chapters / book.VECTOR_LOG).write_text(json.dumps({"embedder": "minilm-384-abc", "served": {},
                                                            "computed": [digest]}) + "\n", encoding="utf-8")

    used("a" * 64, "d1")
    _commit_all(repo)
    target = book.publish("full", repo)
    _commit_all(repo)
    book.install_published(repo)
    # The installed chapters replace what was executed here, and its logs with it.
    assert not any((chapters / log).exists() for log in (book.ANSWER_LOG, book.VECTOR_LOG))
    log = json.loads((chapters / book.EXECUTION_LOG).read_text(encoding="utf-8"))
    last = sorted(log["chapters"])[-1]
    log["chapters"][last]["seconds"] = 2.0  # that chapter executed again, the rest as published
    (chapters / book.EXECUTION_LOG).write_text(json.dumps(log), encoding="utf-8")
    used("b" * 64, "d2")
    _commit_all(repo)
    book.publish("full", repo)
    assert sorted(p.stem for p in (target / "answer-cache").glob("*/*.json")) == ["a" * 64, "b" * 64]
    assert vector_cache.VectorCache(target / "vector-cache").known("minilm-384-abc") == {"d1", "d2"}


def test_publish_refuses_to_delete_a_published_run_that_other_files_cite(tmp_path):
    repo = _fake_repo(tmp_path, "full", "runs/book/ingest-x")
    for name in ("ingest-x", "old-study"):
        where = repo / ("runs/book" if name == "ingest-x" else "book/published/runs/book") / name
        where.mkdir(parents=True)
        (where / "manifest.json").write_text("{}", encoding="utf-8")
    (repo / "labels.json").write_text('{"run": "book/published/runs/book/old-study/x"}', encoding="utf-8")
    _commit_all(repo)
    with pytest.raises(book.BookError, match="would delete runs/book/old-study, which committed files"):
        book.publish("full", repo)
    assert (repo / "book/published/runs/book/old-study/manifest.json").is_file()
    # A README results section rendered from the published book follows the publication; prose does not.
    (repo / "labels.json").write_text('{"run": "benchmarks/runs/old-study/x"}', encoding="utf-8")
    (repo / "README.md").write_text("Prose cites book/published/runs/book/old-study/scorecard.json.\n",
                                    encoding="utf-8")
    _commit_all(repo)
    with pytest.raises(book.BookError, match="would delete runs/book/old-study"):
        book.publish("full", repo)
    (repo / "README.md").write_text("<!-- results:ladder -->\nFrom book/published/runs/book/old-study/"
                                    "scorecard.json\n<!-- /results:ladder -->\n", encoding="utf-8")
    _commit_all(repo)
    assert (book.publish("full", repo) / "runs/book/ingest-x/manifest.json").is_file()


def test_publish_refuses_a_mixed_or_smoke_book(tmp_path):
    repo = _fake_repo(tmp_path, "smoke", "runs/book/ingest-x")
    with pytest.raises(book.BookError, match="not executed under the 'full' profile: 01_ingest"):
        book.publish("full", repo)
    with pytest.raises(book.BookError, match="no published chapters"):
        book.install_published(repo)


PUBLISHED = book.published_dir(REPO)


def test_published_book_is_one_full_run_with_its_evidence():
    """What the committed book shows: every chapter executed under `full`, with outputs, every
    figure and table naming a run directory that is committed next to it, complete — or stopped
    with the reason in its manifest, or, for a long study still being read (resumable from its
    case records), shown as unfinished by the chapter."""
    log = json.loads((PUBLISHED / book.EXECUTION_LOG).read_text(encoding="utf-8"))
    assert log["profile"] == "full"
    assert sorted(log["chapters"]) == [p.stem for p in NOTEBOOKS]
    for source in NOTEBOOKS:
        executed = PUBLISHED / f"{source.stem}.ipynb"
        notebook = nbformat.read(executed, as_version=4)
        figures = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
                   if "image/png" in o.get("data", {})]
        assert figures, f"{source.stem}: no figure in the published chapter"
        assert not [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
                    if o.get("output_type") == "error"], f"{source.stem} has an error output"
        runs = book.runs_named(executed)
        assert runs, f"{source.stem}: no caption names a run"
        text = json.dumps([c.get("outputs", []) for c in notebook.cells if c.cell_type == "code"])
        for run in runs:
            manifest = json.loads((PUBLISHED / run / "manifest.json").read_text(encoding="utf-8"))
            status = manifest.get("status", "complete")
            assert (status == "complete" or (status == "stopped" and manifest.get("stopped"))
                    or f"Study `{run}`: unfinished" in text), run
