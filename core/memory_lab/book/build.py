"""Execute the book's chapters with Papermill, then build the Jupyter Book.

The chapters are text-first notebooks: `notebooks/NN_name.md`, MyST Markdown in
jupytext's `md:myst` format, which JupyterLab (with the jupytext extension) opens,
runs and saves as a notebook. At build time each is turned into a notebook by
jupytext (`_build/notebooks/NN_name.ipynb`, never committed) and executed by
Papermill with parameters from a profile (`book/profiles/<profile>.toml`) into
`book/chapters/NN_name.ipynb`, with that folder as the kernel's working
directory. `_toc.yml` points at those executed copies; `_config.yml` turns
Jupyter Book's own execution off, so the book shows exactly what the profile run
produced. Then `jupyter-book build` runs with warnings as errors. Every executed
chapter records the path and SHA-256 of the Markdown file it was built from, so
the book can be traced to the very file saved in JupyterLab.

In the rendered book a chapter opens on its narrative and results: every code
cell's input is folded behind a toggle (the `hide-input` tag, added to the
executed copies here rather than to every cell of the sources), and cells tagged
`remove-input` in the source are not shown at all.

The published results are one `full` run: `publish()` copies its executed chapters,
and every run directory their captions name, into `book/published/` (committed),
and `book(published=True)` builds the book from those copies without executing
anything, so the HTML shows exactly that run's outputs. The answers, reranker
scores and document vectors the run used are exported beside it
(`answer-cache/`, `vector-cache/`) and read first by every later execution, so
`book --profile full` on a fresh clone recomputes only what a change invalidates.

Profile files: a `[all]` table of parameters offered to every notebook (each
notebook takes only the names its `parameters` cell declares) and one table per
notebook (`[03_embeddings]`) whose every key must be declared there — a typo is
an error, not a silently ignored setting.

Paths: every function takes the book root (`repo`: the folder holding
`_config.yml`, `notebooks/` and `book/`); by default it is found from the current
directory (`memory_lab.book.paths.project_root`), never from where the package is
installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from memory_baseline import vector_cache
from memory_baseline.answer_cache import CACHE_ONLY_ENV, READ_FIRST_ENV, USAGE_LOG_ENV, AnswerCache, usage
from memory_baseline.hashing import file_digest
from memory_lab.book.paths import ROOT_ENV, project_root

KERNEL_NAME = "memory-baseline"
PROFILES = ("smoke", "full")
SOURCE_FORMAT = "md:myst"   # jupytext's MyST Markdown notebooks
# Tags under which a cell's input is already hidden or removed in the rendered book.
_HIDDEN = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


class BookError(ValueError):
    """Bad input: an unknown profile or notebook, a parameter a notebook does not declare."""


class DirtyTreeError(BookError):
    """Publishing from a tree with uncommitted changes: the published runs would name a
    code version (`<sha>-dirty`) nobody can check out. The CLI exits 2 on it."""


def refuse_dirty_tree(repo: Path) -> None:
    """Raise DirtyTreeError when tracked files of `repo` differ from its last commit."""
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=repo, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise DirtyTreeError(f"cannot tell whether {repo} is clean ({exc}); publish refused") from exc
    if status.returncode != 0:
        raise DirtyTreeError(f"{repo} is not a git checkout; publish needs a committed tree")
    changed = status.stdout.splitlines()
    if changed:
        raise DirtyTreeError(f"publish needs a clean tree: {len(changed)} tracked file(s) have "
                             f"uncommitted changes (first: {changed[0][3:]}); commit them first")


_CITED_RUN = re.compile(r"book/published/(runs/[\w.-]+/[\w.-]+)")


def runs_cited_elsewhere(repo: Path) -> set[str]:
    """Published run directories (`runs/<root>/<name>`) that tracked files outside
    `book/published/` cite: grader labels and results files point at answers kept there.

    The results sections of the README and book/benchmarks.md do not count: `memory_lab.book.readme`
    renders them from the published book, so they follow a new publication (and
    tests/test_readme.py fails until they are rendered again)."""
    from memory_lab.book.readme import DOCUMENTS, without_results_sections

    found = subprocess.run(["git", "grep", "-ohE", "book/published/runs/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+",
                            "--", ".", ":(exclude)book/published", ":(exclude)_build",
                            *(f":(exclude){d.as_posix()}" for d in DOCUMENTS)],
                           cwd=repo, capture_output=True, text=True, check=False)
    if found.returncode > 1:  # 1 is "nothing found"
        raise BookError(f"cannot list the runs other files cite: git grep: {found.stderr.strip()}")
    prose = "\n".join(without_results_sections((repo / d).read_text(encoding="utf-8"))
                      for d in DOCUMENTS if (repo / d).is_file())
    return {m.group(1) for m in _CITED_RUN.finditer(found.stdout + "\n" + prose)}


class BookBuildFailed(RuntimeError):
    """A chapter raised while executing, or Jupyter Book reported a warning or an error."""


@dataclass(frozen=True)
class ChapterRun:
    name: str
    output: Path
    seconds: float
    parameters: dict[str, Any]
    source: str = ""           # the chapter's Markdown file, relative to the book root
    source_sha256: str = ""    # its digest when it was executed


@dataclass
class BookResult:
    profile: str
    chapters: list[ChapterRun] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)  # chapters copied unexecuted
    build_seconds: float | None = None
    index_html: Path | None = None
    answers: dict[str, Any] = field(default_factory=dict)  # answer_cache.usage of the executions
    vectors: dict[str, Any] = field(default_factory=dict)  # vector_cache.usage of the executions

    def to_dict(self) -> dict[str, Any]:
        return {
            "answers": {k: v for k, v in self.answers.items() if k != "keys"},
            "vectors": {k: v for k, v in self.vectors.items() if k != "used"},
            "profile": self.profile,
            "chapters": [{"name": c.name, "output": str(c.output), "seconds": round(c.seconds, 1),
                          "parameters": c.parameters} for c in self.chapters],
            "placeholders": self.placeholders,
            "build_seconds": None if self.build_seconds is None else round(self.build_seconds, 1),
            "index_html": str(self.index_html) if self.index_html else None,
        }


def _root(repo: str | Path | None) -> Path:
    return Path(repo).resolve() if repo is not None else project_root()


def notebook_sources(repo: str | Path | None = None) -> list[Path]:
    """The chapter sources, in chapter order (`notebooks/NN_name.md`)."""
    return sorted(p for p in (_root(repo) / "notebooks").glob("[0-9][0-9]_*.md"))


def chapters_dir(repo: str | Path | None = None) -> Path:
    return _root(repo) / "book" / "chapters"


def published_dir(repo: str | Path | None = None) -> Path:
    return _root(repo) / "book" / "published"


def converted_dir(repo: str | Path | None = None) -> Path:
    """Where the build writes each chapter source as `.ipynb` for Papermill (inside `_build/`)."""
    return _root(repo) / "_build" / "notebooks"


def executed_name(source: Path) -> str:
    return f"{source.stem}.ipynb"


def read_chapter(source: Path, repo: str | Path | None = None) -> Any:
    """A chapter source as an `nbformat` notebook (jupytext), checked and ready for Papermill.

    Cell ids are `NN-index` (stable from one build to the next), jupytext's own
    bookkeeping is dropped, and `metadata.memory_lab` names the source file and its
    SHA-256. A file that is not a chapter (no kernelspec, no `parameters` cell)
    is a `BookError`.
    """
    import jupytext

    try:
        notebook = jupytext.read(source, fmt=SOURCE_FORMAT)
    except Exception as exc:  # jupytext raises several kinds for a malformed file
        raise BookError(f"{source} is not a jupytext MyST notebook: {exc}") from exc
    if notebook.metadata.get("kernelspec", {}).get("name") != KERNEL_NAME:
        raise BookError(f"{source.name}: front matter must name the kernelspec {KERNEL_NAME!r}")
    tagged = [c for c in notebook.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(tagged) != 1 or tagged[0].cell_type != "code":
        raise BookError(f"{source.name} needs exactly one code cell tagged `parameters` "
                        f"(found {len(tagged)})")
    notebook.metadata.pop("jupytext", None)
    notebook.metadata.setdefault("language_info", {"name": "python"})
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"{source.stem[:2]}-{index:02d}"
    root = _root(repo)
    resolved = source.resolve()
    shown = resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else str(resolved)
    notebook.metadata["memory_lab"] = {"source": shown, "sha256": file_digest(source)}
    return notebook


def convert_chapter(source: Path, target: Path, repo: str | Path | None = None) -> Path:
    """Write a chapter source as the `.ipynb` Papermill executes."""
    import nbformat

    notebook = read_chapter(source, repo)
    nbformat.validate(notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


def hide_inputs(path: Path) -> None:
    """Fold every code cell's input behind a toggle in the rendered book (`hide-input`).

    Cells already tagged to hide or remove their input keep that tag. Papermill's
    injected-parameters cell is folded too, so no page opens on code.
    """
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    changed = False
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if not _HIDDEN & set(tags):
            tags.append("hide-input")
            changed = True
    if changed:
        nbformat.write(notebook, path)


EXECUTION_LOG = "_execution.json"


def runs_named(notebook: Path) -> list[str]:
    """The run directories (repository-relative) that a notebook's captions name."""
    from memory_lab.studies.setup import CAPTION_SOURCE

    pattern = re.escape(CAPTION_SOURCE.partition("{run}")[0]) + r"([^`]+)`"
    return sorted(set(re.findall(pattern, notebook.read_text(encoding="utf-8"))))


def publish(profile: str = "full", repo: str | Path | None = None) -> Path:
    """Copy the executed chapters and the run directories they name into `book/published/`.

    Refuses unless every chapter in `book/chapters/` was executed under `profile`
    (per `_execution.json`) and every run directory a caption names exists: the
    published book must be one profile's run, with its evidence next to it. Run
    directories keep their repository-relative paths under `book/published/`.
    A tree with uncommitted changes is refused (DirtyTreeError).
    """
    repo = _root(repo)
    refuse_dirty_tree(repo)
    executed = chapters_dir(repo)
    log_path = executed / EXECUTION_LOG
    log = json.loads(log_path.read_text(encoding="utf-8")) if log_path.is_file() else {}
    entries = log.get("chapters", {}) if isinstance(log.get("chapters"), dict) else {}
    sources = notebook_sources(repo)
    wrong = [s.stem for s in sources if entries.get(s.stem, {}).get("profile") != profile]
    if wrong:
        raise BookError(f"not executed under the {profile!r} profile: {', '.join(wrong)} "
                        f"(run `memory-lab book --profile {profile}` first)")
    runs = {run for s in sources for run in runs_named(executed / executed_name(s))}
    target = published_dir(repo)

    def found(run: str) -> Path | None:
        # A chapter republished as it was (installed from book/published) keeps its runs there.
        for base in (repo, target):
            if (base / run / "manifest.json").is_file():
                return base / run
        return None

    missing = sorted(run for run in runs if found(run) is None)
    if missing:
        raise BookError(f"captions name run directories that are not here: {', '.join(missing)}")
    # Replacing book/published/ deletes every run the new chapters do not name; a run that a
    # committed file elsewhere still cites would be lost with it, so that is refused.
    orphaned = sorted(run for run in runs_cited_elsewhere(repo) - runs if (target / run).is_dir())
    if orphaned:
        raise BookError(f"publishing would delete {', '.join(orphaned)}, which committed files outside "
                        "book/published cite: move it to benchmarks/runs and update them first")
    staging = target.with_name(target.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for source in sources:
        shutil.copyfile(executed / executed_name(source), staging / executed_name(source))
    for run in sorted(runs):
        shutil.copytree(found(run), staging / run)
    # A chapter installed from book/published and not executed since (an `--only` run on a fresh
    # clone) logged no answers or vectors here: the published ones are kept for it, or its
    # rebuild would recompute them.
    kept_answers: list[str] = []
    kept_vectors: dict[str, list[str]] = {}
    if _republished_as_is(entries, target):
        kept_answers = [p.stem for p in (target / "answer-cache").glob("*/*.json")]
        published_vectors = vector_cache.VectorCache(target / "vector-cache")
        kept_vectors = {folder.name: sorted(published_vectors.known(folder.name))
                        for folder in (target / "vector-cache").glob("*") if folder.is_dir()}
    # The answers the chapters used, so the published book rebuilds from the repository.
    used = sorted({*usage(executed / ANSWER_LOG)["keys"], *kept_answers})
    if used:
        AnswerCache(read_first=[repo / c for c in COMMITTED_ANSWER_CACHES]).export(
            used, staging / "answer-cache")
    # And the document vectors, so a rebuild does not spend its time encoding.
    vectors = vector_cache.usage(executed / VECTOR_LOG)["used"]
    for identity_key, digests in kept_vectors.items():
        vectors[identity_key] = sorted({*vectors.get(identity_key, []), *digests})
    if vectors:
        vector_cache.VectorCache(_vector_home(), read_first=[repo / COMMITTED_VECTOR_CACHE]).export(
            vectors, staging / "vector-cache")
    document = {"profile": profile, "published": datetime.now(UTC).isoformat(),
                "chapters": {s.stem: entries[s.stem] for s in sources}, "runs": sorted(runs)}
    (staging / EXECUTION_LOG).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def _republished_as_is(entries: dict[str, Any], target: Path) -> list[str]:
    """Chapters whose execution record is the published one: copied in, not executed again."""
    log = target / EXECUTION_LOG
    if not log.is_file():
        return []
    published = json.loads(log.read_text(encoding="utf-8")).get("chapters", {})
    return [name for name, entry in entries.items() if published.get(name) == entry]


def answer_usage(log: Path, repo: Path, since: int = 0) -> dict[str, Any]:
    """How the executed chapters got their answers (`answer_cache.usage`), layers shown relative."""
    return _shown_layers(usage(log, since), repo)


def _shown_layers(counts: dict[str, Any], repo: Path) -> dict[str, Any]:
    counts["by_layer"] = {(_shown(Path(k), repo) if k else k): v for k, v in counts["by_layer"].items()}
    return counts


def install_published(repo: str | Path | None = None) -> list[Path]:
    """Put the published chapters where the book is built from; nothing is executed.

    The published files stay as they are; only the copies in `book/chapters/` get
    their code folded (`hide_inputs`).
    """
    source = published_dir(repo)
    notebooks = sorted(source.glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise BookError(f"no published chapters in {source}: run `memory-lab book --profile "
                        "full --publish` first")
    target = chapters_dir(repo)
    target.mkdir(parents=True, exist_ok=True)
    for notebook in notebooks:
        shutil.copyfile(notebook, target / notebook.name)
        hide_inputs(target / notebook.name)
    shutil.copyfile(source / EXECUTION_LOG, target / EXECUTION_LOG)
    # What earlier executions here logged belongs to chapters now replaced; `publish` keeps the
    # published answers and vectors of chapters installed as they were.
    for log in (ANSWER_LOG, VECTOR_LOG):
        (target / log).unlink(missing_ok=True)
    return [target / n.name for n in notebooks]


def select_notebooks(sources: list[Path], only: str | None) -> list[Path]:
    """All notebooks, or the one `only` names (`03`, `03_embeddings` or `embeddings`)."""
    if only is None:
        return sources
    wanted = only.removesuffix(".ipynb").removesuffix(".md")
    matches = [p for p in sources
               if wanted in (p.stem, p.stem[:2], p.stem[3:])]
    if len(matches) != 1:
        names = ", ".join(p.stem for p in sources)
        raise BookError(f"--only {only!r} names no single notebook; choose one of: {names}")
    return matches


def load_profile(profile: str, repo: str | Path | None = None) -> tuple[Path, dict[str, Any]]:
    """A profile by name (`smoke`, `full`) or by path to a TOML file."""
    path = Path(profile)
    if not path.suffix:
        path = _root(repo) / "book" / "profiles" / f"{profile}.toml"
    if not path.is_file():
        raise BookError(f"no profile {profile!r}: expected {path} (profiles: {', '.join(PROFILES)})")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise BookError(f"profile {path} is not valid TOML: {exc}") from exc
    return path, data


def declared_parameters(notebook: Path) -> dict[str, Any]:
    """Names (and defaults as written) of a chapter's `parameters` cell (`.md` source or `.ipynb`)."""
    import papermill

    if notebook.suffix == ".md":
        with tempfile.TemporaryDirectory() as folder:
            converted = convert_chapter(notebook, Path(folder) / executed_name(notebook))
            declared = papermill.inspect_notebook(str(converted))
    else:
        declared = papermill.inspect_notebook(str(notebook))
    if not declared:
        raise BookError(f"{notebook.name} has no cell tagged `parameters`")
    return declared


def parameters_for(notebook: Path, profile: dict[str, Any]) -> dict[str, Any]:
    declared = declared_parameters(notebook)
    chosen = {k: v for k, v in profile.get("all", {}).items() if k in declared}
    own = profile.get(notebook.stem, {})
    unknown = sorted(set(own) - set(declared))
    if unknown:
        raise BookError(f"profile sets {unknown} for {notebook.stem}, which declares only "
                        f"{sorted(declared)}")
    chosen.update(own)
    return chosen


def known_tables(profile: dict[str, Any], sources: list[Path]) -> None:
    names = {p.stem for p in sources} | {"all"}
    unknown = sorted(set(profile) - names)
    if unknown:
        raise BookError(f"profile has tables for no notebook: {unknown}")


def require_kernel() -> None:
    from jupyter_client.kernelspec import KernelSpecManager

    if KERNEL_NAME not in KernelSpecManager().find_kernel_specs():
        raise BookError(
            f"Jupyter kernel {KERNEL_NAME!r} is not installed: run `{sys.executable} -m ipykernel "
            f"install --sys-prefix --name {KERNEL_NAME}` (scripts/install.sh does this)")


# Committed answers, read before the user's own cache: the published run's (exported by
# `publish`) and the studies' (benchmarks/answer-cache). A fresh machine reproduces the
# published chapters from them and computes only what a change of code, prompt or model
# invalidates.
COMMITTED_ANSWER_CACHES = ("book/published/answer-cache", "benchmarks/answer-cache")
ANSWER_LOG = "_answers.jsonl"
# The published run's document vectors (memory_baseline.vector_cache), read before the
# memory home's own; the kernels log which they used to VECTOR_LOG.
COMMITTED_VECTOR_CACHE = "book/published/vector-cache"
VECTOR_LOG = "_vectors.jsonl"


def _vector_home() -> Path:
    from memory_baseline.server import memory_home

    return memory_home() / "vector-cache"


@contextlib.contextmanager
def _kernel_environment(repo: Path, answer_log: Path, cached_only: bool = False):
    """Tell the chapter's kernel (a child process, which inherits the environment) the book root,
    the committed answer caches to read first, where to log each answer's origin, and whether
    an answer missing from every cache may be computed."""
    layers = [str(repo / c) for c in COMMITTED_ANSWER_CACHES if (repo / c).is_dir()]
    own = [p for p in os.environ.get(READ_FIRST_ENV, "").split(os.pathsep) if p]
    wanted = {ROOT_ENV: str(repo), READ_FIRST_ENV: os.pathsep.join(dict.fromkeys(own + layers)),
              USAGE_LOG_ENV: str(answer_log),
              vector_cache.WRITE_ENV: str(_vector_home()),
              vector_cache.READ_FIRST_ENV: str(repo / COMMITTED_VECTOR_CACHE),
              vector_cache.USAGE_LOG_ENV: str(answer_log.with_name(VECTOR_LOG))}
    if cached_only:
        wanted[CACHE_ONLY_ENV] = "1"
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def execute_notebook(source: Path, output: Path, parameters: dict[str, Any], *, progress: bool,
                     repo: str | Path | None = None, answer_log: Path | None = None,
                     cached_only: bool = False) -> float:
    """Run one chapter with Papermill; the kernel's working directory is the output folder.

    `source` is a chapter's `.md` (converted to `_build/notebooks/` first) or an
    `.ipynb`. Relative paths in the chapter are read from `repo`, the book root.
    The executed copy has its code folded for the book (`hide_inputs`).
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    repo = _root(repo)
    if source.suffix == ".md":
        source = convert_chapter(source, converted_dir(repo) / executed_name(source), repo)
    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        with _kernel_environment(repo, answer_log or output.parent / ANSWER_LOG, cached_only):
            papermill.execute_notebook(
                str(source), str(output), parameters=parameters, kernel_name=KERNEL_NAME,
                cwd=str(output.parent), progress_bar=progress, log_output=False,
            )
    except PapermillExecutionError as exc:
        raise BookBuildFailed(f"{source.name} failed in cell {exc.exec_count}: {exc.ename}: "
                        f"{str(exc.evalue).splitlines()[0] if exc.evalue else ''} "
                        f"(the executed notebook with the error is {output})") from exc
    seconds = time.perf_counter() - started
    hide_inputs(output)
    return seconds


def build_html(repo: str | Path | None = None) -> Path:
    """`jupyter-book build` of the repository root, warnings as errors; returns index.html.

    The previous HTML is removed first: Sphinx never deletes a page whose source is
    gone, and a stale page would be published (and checked) as if it were current.
    """
    repo = _root(repo)
    shutil.rmtree(repo / "_build" / "html", ignore_errors=True)
    executable = Path(sys.executable).parent / "jupyter-book"
    command = [str(executable) if executable.exists() else "jupyter-book", "build", str(repo),
               "--builder", "html", "--warningiserror", "--keep-going"]
    completed = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-25:])
        raise BookBuildFailed(f"jupyter-book build failed (exit {completed.returncode}):\n{tail}")
    index = repo / "_build" / "html" / "index.html"
    if not index.is_file():
        raise BookBuildFailed(f"jupyter-book reported success but {index} is missing")
    return index


def book(
    profile: str = "smoke", only: str | None = None, *, execute: bool = True, build: bool = True,
    publish_after: bool = False, published: bool = False, progress: bool = True,
    repo: str | Path | None = None, cached_only: bool = False,
) -> BookResult:
    """Execute the chapter notebooks under `profile` (all, or `only` one), then build the book.

    A chapter that has never been executed and is not selected is copied in without
    outputs, so `--only` still yields a complete book; the result lists those
    placeholders. `book/chapters/_execution.json` records what ran, with which
    parameters, and for how long. `published=True` builds from `book/published/`
    instead (no execution); `publish_after=True` publishes the chapters once built.
    `repo` is the book root (default: found from the current directory). `cached_only`
    refuses to compute any answer or reranker score the caches do not hold: a chapter
    that needs one fails, naming it, so a reproduction proves it computed nothing.
    """
    repo = _root(repo)
    if publish_after:
        refuse_dirty_tree(repo)  # before hours of execution, not after
    if not (repo / "_config.yml").is_file():
        raise BookError(f"{repo} is not a book root (no _config.yml): run from the book's folder "
                        "or pass --root")
    if published:
        if only is not None or publish_after:
            raise BookError("--from-published builds the committed chapters; it takes no --only or --publish")
        install_published(repo)
        result = BookResult(profile="published")
        if build:
            _build(result, repo)
        return result
    profile_path, settings = load_profile(profile, repo)
    sources = notebook_sources(repo)
    if not sources:
        raise BookError(f"no chapter notebooks in {repo / 'notebooks'}")
    known_tables(settings, sources)
    selected = select_notebooks(sources, only)
    plans = [(source, parameters_for(source, settings)) for source in selected]
    result = BookResult(profile=profile_path.stem)
    target_dir = chapters_dir(repo)
    target_dir.mkdir(parents=True, exist_ok=True)
    if execute:
        require_kernel()
        # The log covers every chapter in book/chapters (publish exports its keys), so an
        # `--only` run appends to it; a whole run starts it afresh.
        answer_log = target_dir / ANSWER_LOG
        vector_log = target_dir / VECTOR_LOG
        if only is None:
            answer_log.unlink(missing_ok=True)
            vector_log.unlink(missing_ok=True)
        start = answer_log.stat().st_size if answer_log.is_file() else 0
        vector_start = vector_log.stat().st_size if vector_log.is_file() else 0
        bar = tqdm(plans, desc=f"book ({result.profile})", unit="chapter", disable=not progress)
        for source, parameters in bar:
            bar.set_postfix_str(source.stem)
            output = target_dir / executed_name(source)
            seconds = execute_notebook(source, output, parameters, progress=progress, repo=repo,
                                       answer_log=answer_log, cached_only=cached_only)
            result.chapters.append(ChapterRun(source.stem, output, seconds, parameters,
                                              _shown(source, repo), file_digest(source)))
        bar.close()
        result.answers = answer_usage(answer_log, repo, start)
        result.vectors = _shown_layers(vector_cache.usage(vector_log, vector_start), repo)
    for source in sources:
        copy = target_dir / executed_name(source)
        if not copy.exists():
            convert_chapter(source, copy, repo)
            hide_inputs(copy)
            result.placeholders.append(source.stem)
    _write_log(target_dir / EXECUTION_LOG, result, profile_path, repo)
    if build:
        _build(result, repo)
        _write_log(target_dir / EXECUTION_LOG, result, profile_path, repo)
    if publish_after:
        publish(profile_path.stem, repo)
    return result


def _build(result: BookResult, repo: Path) -> None:
    started = time.perf_counter()
    result.index_html = build_html(repo)
    result.build_seconds = time.perf_counter() - started


def _shown(path: Path, repo: Path) -> str:
    resolved = path.resolve()
    return resolved.relative_to(repo).as_posix() if resolved.is_relative_to(repo) else str(resolved)


def _write_log(path: Path, result: BookResult, profile_path: Path, repo: Path) -> None:
    previous: dict[str, Any] = {}
    if path.is_file():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            previous = {}
    chapters = previous.get("chapters", {}) if isinstance(previous.get("chapters"), dict) else {}
    for chapter in result.chapters:
        chapters[chapter.name] = {"profile": result.profile, "seconds": round(chapter.seconds, 1),
                                  "parameters": chapter.parameters,
                                  "source": chapter.source, "source_sha256": chapter.source_sha256,
                                  "executed": datetime.now(UTC).isoformat()}
    document = {"profile_file": _shown(profile_path, repo),
                "chapters": chapters, "placeholders": result.placeholders,
                "answers": {k: v for k, v in result.answers.items() if k != "keys"}
                if result.answers else previous.get("answers"),
                "vectors": {k: v for k, v in result.vectors.items() if k != "used"}
                if result.vectors else previous.get("vectors"),
                "build_seconds": None if result.build_seconds is None else round(result.build_seconds, 1)}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
