"""Write the book's chapter notebooks (clean: no outputs) from the cell lists below.

Run `python notebooks/_build_notebooks.py` after editing a chapter here; the
.ipynb files are generated, committed, and executed by `memory-baseline book`
(Papermill). Keeping the source of truth in one Python file makes the narrative
reviewable as text and guarantees every notebook has the same skeleton: a title,
a `parameters` cell, a setup cell, the study (calls into
`memory_lab.experiments` / `evaluation`), tables, figures, and what the
result does and does not establish. Cells whose output holds timings carry the
`nbval-ignore-output` tag.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
KERNEL = {"name": "memory-baseline", "display_name": "memory-baseline (.venv)", "language": "python"}
IGNORE = ["nbval-ignore-output"]


def md(text: str):
    return new_markdown_cell(text.strip("\n"))


def code(text: str, tags: list[str] | None = None):
    cell = new_code_cell(text.strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def parameters(text: str):
    return code(text, ["parameters"])


def setup(names: list[str], extra: str = "", *, imports: tuple[str, ...] = (),
          project: tuple[str, ...] = ("from memory_baseline.config import Config",)) -> object:
    """The setup cell: imports, the parameter record for the run manifest, a connection."""
    listed = ",\n    ".join(repr(n) for n in names)
    first = "\n".join(["%matplotlib inline", *imports, "import warnings", "",
                       "import matplotlib.pyplot as plt"])
    ours = "\n    ".join(sorted(["from memory_lab import experiments as ex", *project,
                          "from memory_baseline.server import connect"]))
    return code(f'''
{first}

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="IProgress not found")  # plain-text progress is fine
    {ours}

PARAMETERS = {{name: globals()[name] for name in [
    {listed},
]}}
conn = connect()
{extra}
''', ["hide-input"])


COMMON = '''
runs_root = "runs/book"  # study run directories are written here (relative paths: repository root)
'''

# -- 01 ---------------------------------------------------------------------------------------

CH01 = [
    md("""
# 1. The corpus and its index

This chapter indexes the corpus every later chapter reads, and looks at it before
anything is measured: which files were taken and which refused (with the reason),
how each chunking policy cuts them, and whether the index passes its integrity
checks. Nothing here is a quality result; it is the inventory a quality result
depends on.
"""),
    parameters('''
corpus_dir = "fixtures/history"      # the folder the system may read
tasks_path = "fixtures/tasks.json"   # the instrument's tasks (never inside the corpus)
index_name = "book_fixture"          # PostgreSQL schema shared by chapters 4-8
embedder = "minilm"
chunk_policies = ["sentences", "sections", "fixed", "whole"]
target_chars = 2000
overlap_chars = 300
''' + COMMON),
    setup(["corpus_dir", "tasks_path", "index_name", "embedder", "chunk_policies", "target_chars",
           "overlap_chars", "runs_root"], '''
corpus = ex.repo_path(corpus_dir)
config = Config(index=index_name).with_overrides(embedder={"name": embedder})
run = ex.start_study(runs_root, "ingest", PARAMETERS, corpora={"corpus": corpus},
                     tasks_path=ex.repo_path(tasks_path))
'''),
    md("""
## Ingest

`refresh.sync` walks the folder, reads each supported file into a source record
(path relative to the root, kind, content hash, the date the artifact states),
chunks it, embeds the chunks and writes everything in one transaction. A second
run over an unchanged corpus writes nothing. The counts below depend on whether
the index existed before this run, so their output is not compared between runs.
"""),
    code('''
report = ex.index_corpus(conn, config, corpus)
run.record("sync", report.to_dict())
run.record("configuration", config.to_dict())
print(f"added {len(report.added)}, changed {len(report.changed)}, re-embedded {len(report.reembedded)}, "
      f"unchanged {report.unchanged}; {report.chunks_written} chunks written")
print("seconds:", report.seconds)
''', IGNORE),
    md("""
## What the corpus holds

The kind is read from the file name and suffix (`adr-007.md` is a decision
record by name only; the label never boosts a ranking). "dated" counts sources
whose own text or name states a date.
"""),
    code('''
inventory, not_read = ex.corpus_inventory(corpus)
run.write_rows("inventory", inventory)
ex.show_table(inventory, run.caption("Table 1.1: sources by kind"))
ex.show_table(not_read or [{"path": "(none)", "reason": ""}],
              run.caption("Table 1.2: files found but not indexed, with the reason"))
'''),
    md("""
## How the policies cut it

`sentences` packs whole sentences up to the target with an overlap; `sections`
keeps a Markdown section together whatever its length; `fixed` ignores structure;
`whole` keeps a file as one passage. "repeated share" is the fraction of stored
characters that are copies made by overlap: storage and candidate slots paid for
text that is already there.
"""),
    code('''
chunk_rows, chunk_sizes = ex.chunk_statistics(corpus, chunk_policies, target_chars=target_chars,
                                              overlap_chars=overlap_chars)
run.write_rows("chunk_statistics", chunk_rows)
ex.show_table(chunk_rows, run.caption(f"Table 1.3: chunks per policy (target {target_chars} "
                                      f"characters, overlap {overlap_chars})"))
'''),
    code('''
fig, ax = plt.subplots(figsize=(7.5, 3.6))
ax.boxplot([chunk_sizes[p] for p in chunk_policies], tick_labels=chunk_policies, orientation="horizontal")
ax.axvline(target_chars, color="0.5", linestyle="--", linewidth=1, label="target")
ax.set_xscale("log")
ax.set_xlabel("chunk length (characters, log scale)")
ax.legend(loc="lower right")
fig.tight_layout()
ex.show_figure(fig, run.caption("Figure 1.1: chunk lengths per policy"), run_name=run.name,
               save_as=run.run_dir / "chunk_lengths.png")
'''),
    md("""
## Integrity

Health is not quality: these checks say whether the index holds what it claims
(no orphan chunks, one representation, BM25 statistics matching the text, the
indexes present), not whether it retrieves the right evidence.
"""),
    code('''
healthy, health = ex.health_rows(conn, config)
run.write_rows("health", health)
ex.show_table(health, run.caption("Table 1.4: health checks of index `" + index_name + "` — "
                                  + ("all passed" if healthy else "FAILED")))
run.finish(healthy=healthy)
'''),
    md("""
## What this establishes

That the corpus was read as intended, what was refused and why, how large the
passages are under each policy, and that the index is internally consistent.
It says nothing yet about whether the right passages are found; that starts in
chapter 2.
"""),
]

# -- 02 ---------------------------------------------------------------------------------------

CH02 = [
    md("""
# 2. Chunking: what travels together

A decision and its reason often sit in different places: a decision record
names the choice, a report or a long session holds the measurement behind it.
Where a chunk boundary falls decides whether a retrieved passage carries the
reason, and overlap decides how much of the reader's budget is spent on text it
has already seen. This chapter measures both on a generated world built so that
decisions are separated from their rationale, with long sessions that force the
policies to draw different boundaries.

Evidence coverage is the share of a task's evidence quotes (exact spans named by
the task file) that lie wholly inside the passages at a stage: *before* is the top
candidates handed to context assembly, *after* is what assembly admitted under
the token budget. "complete" counts tasks whose every quote arrived. Wasted
overlap is the share of admitted characters that repeat characters already
admitted from the same file. Dense search is exact here (no HNSW), so that the
only thing that differs between the rows is where the chunks end.
"""),
    parameters('''
world_seed = 11
world_docs = 120              # documents in the generated world
long_session_share = 0.6      # share of decisions whose reason sits deep in a long session
policies = None               # None: every registered policy (including a code-aware one if present)
target_chars = 2000
overlap_chars = 300
candidate_depth = 20          # before assembly means the top 20 final candidates
task_limit = None             # None: every task that has evidence quotes
index_prefix = "book_chunking"
embedder = "minilm"
reader = "extractive"         # only its tokenizer is used here: nothing is read
worlds_root = "runs/book/worlds"
''' + COMMON),
    setup(["world_seed", "world_docs", "long_session_share", "policies", "target_chars", "overlap_chars",
           "candidate_depth", "task_limit", "index_prefix", "embedder", "reader", "worlds_root",
           "runs_root"], '''
world = ex.prepare_world(worlds_root, seed=world_seed, docs=world_docs,
                         long_session_share=long_session_share)
policies = policies or ex.available_chunkers()
tasks = ex.load_task_subset(world.tasks_path, limit=task_limit, needs_evidence=True)
base = Config(index=f"{index_prefix}_base").with_overrides(
    embedder={"name": embedder}, reader={"name": reader},
    chunking={"target_chars": target_chars, "overlap_chars": overlap_chars})
run = ex.start_study(runs_root, "chunking", PARAMETERS, corpora={"world": world.history},
                     tasks_path=world.tasks_path)
print(f"world {world.root.name}: {len(tasks)} tasks with evidence quotes; policies {policies}")
'''),
    code('''
rows = ex.chunking_study(conn, base, world.history, tasks, policies, index_prefix=index_prefix,
                         reader=ex.reader_for(reader, base), candidate_depth=candidate_depth,
                         run=run, progress=False)
run.write_rows("cases", rows)
'''),
    code('''
metrics = ["chunks_in_index", "coverage_candidates", "coverage_admitted", "complete_candidates",
           "complete_admitted", "wasted_share", "prompt_tokens"]
summary = ex.summarise(rows, ["policy"], metrics)
run.write_rows("summary", summary)
ex.show_table(summary, run.caption("Table 2.1: evidence coverage before and after context assembly, "
                                   "and wasted overlap, per chunking policy (means over tasks)"))
'''),
    code('''
import numpy as np

x = np.arange(len(summary))
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
left.bar(x - 0.2, [r["coverage_candidates"] or 0 for r in summary], 0.4, label="top candidates")
left.bar(x + 0.2, [r["coverage_admitted"] or 0 for r in summary], 0.4, label="admitted")
left.set_xticks(x, [r["policy"] for r in summary])
left.set_ylim(0, 1.05)
left.set_ylabel("evidence quotes covered (mean)")
left.legend(loc="lower right", fontsize=8)
right.bar(x, [r["wasted_share"] or 0 for r in summary], 0.5, color="tab:red")
right.set_xticks(x, [r["policy"] for r in summary])
right.set_ylabel("admitted characters repeated")
fig.tight_layout()
ex.show_figure(fig, run.caption("Figure 2.1: evidence coverage (left) and wasted overlap (right) "
                                "per chunking policy"), run_name=run.name,
               save_as=run.run_dir / "coverage.png")
'''),
    code('''
by_type = ex.summarise(rows, ["policy", "question_type"], ["coverage_admitted"])
run.write_rows("by_question_type", by_type)
ex.show_table(by_type, run.caption("Table 2.2: admitted evidence coverage by question type"))
run.finish(world_digest=world.digest)
'''),
    md("""
## Reading the result

Coverage *before* assembly measures the ranking; coverage *after* adds the
budget, so a policy with long chunks can find the evidence and still lose it
when only a few long passages fit. Wasted overlap is the price of the overlap
that protects a qualification across a boundary.

What it does not establish: the world is generated, its phrasing regular and its
evidence quotes short, so a policy that wins here wins on this kind of text. The
ranking is the default hybrid retrieval; a different encoder or reranker can
change which boundaries matter. A quote counts as covered only when it arrives
whole, which is stricter than what a reader needs for some questions.
"""),
]

# -- 03 ---------------------------------------------------------------------------------------

CH03 = [
    md("""
# 3. Encoders compared

Every offline encoder that ships with the package, on the same chunks, through
the dense path alone (no lexical path, no fusion) and with exact search (no
approximate index), so the differences are the encoder's. Three corpora: the
hand-written fixture, a generated world, and BEIR SciFact, a public benchmark
nobody here wrote. Recall@k is source-level (did an expected file appear among
the first k distinct files); RR is the reciprocal rank of the first one. Cost is
indexing time, query encoding and search latency, and vector storage.
"""),
    parameters('''
embedders = ["minilm", "mpnet", "e5-small", "minilm-int8"]
corpus_dir = "fixtures/history"
tasks_path = "fixtures/tasks.json"
world_seed = 11
world_docs = 120
scifact_dir = "../shared/data/beir-scifact"   # a BEIR folder; skipped with a note when absent
scifact_queries = None        # None: every test query
scifact_docs = None           # None: the whole corpus; a number: judged documents + random others
task_limit = None
ks = [1, 5, 10]
index_prefix = "book_emb"
reader = "extractive"         # only its tokenizer is used here
worlds_root = "runs/book/worlds"
''' + COMMON),
    setup(["embedders", "corpus_dir", "tasks_path", "world_seed", "world_docs", "scifact_dir",
           "scifact_queries", "scifact_docs", "task_limit", "ks", "index_prefix", "reader",
           "worlds_root", "runs_root"], '''
world = ex.prepare_world(worlds_root, seed=world_seed, docs=world_docs)
corpora = {"fixture": (ex.repo_path(corpus_dir), ex.repo_path(tasks_path)),
           "world": (world.history, world.tasks_path)}
base = Config(index=f"{index_prefix}_base").with_overrides(reader={"name": reader})
reader_ = ex.reader_for(reader, base)
run = ex.start_study(runs_root, "embeddings", PARAMETERS,
                     corpora={name: path for name, (path, _) in corpora.items()})
'''),
    code('''
quality, cost = [], []
for corpus_name, (history, task_file) in corpora.items():
    tasks = ex.load_task_subset(task_file, limit=task_limit, needs_sources=True)
    task_rows, cost_rows = ex.embedding_study(
        conn, base, history, tasks, embedders, index_prefix=f"{index_prefix}_{corpus_name}",
        reader=reader_, ks=ks, run=run, progress=False)
    quality += [{"corpus": corpus_name, **row} for row in task_rows]
    cost += [{"corpus": corpus_name, **row} for row in cost_rows]
run.write_rows("cases", quality)
run.write_rows("cost", cost)
'''),
    code('''
summary = ex.summarise(quality, ["corpus", "embedder"], [f"R@{k}" for k in ks] + ["RR"])
run.write_rows("summary", summary)
ex.show_table(summary, run.caption("Table 3.1: dense-only retrieval quality per encoder "
                                   "(source-level recall at k, reciprocal rank; means over tasks)"))
'''),
    code('''
ex.show_table(cost, run.caption("Table 3.2: what each encoder costs (timings from this machine; "
                                "embed seconds are zero when the index was already current)"))
''', IGNORE),
    code('''
import numpy as np

names = [e for e in embedders if any(r["embedder"] == e for r in summary)]
corpus_names = list(corpora)
fig, ax = plt.subplots(figsize=(7.5, 3.6))
width = 0.8 / max(len(names), 1)
for i, name in enumerate(names):
    values = [next((r[f"R@{ks[-1]}"] for r in summary if r["embedder"] == name and r["corpus"] == c), 0)
              for c in corpus_names]
    ax.bar(np.arange(len(corpus_names)) + i * width, [v or 0 for v in values], width, label=name)
ax.set_xticks(np.arange(len(corpus_names)) + width * (len(names) - 1) / 2, corpus_names)
ax.set_ylabel(f"source recall@{ks[-1]} (dense only)")
ax.set_ylim(0, 1.05)
ax.legend(fontsize=8, ncol=2, loc="lower right")
fig.tight_layout()
ex.show_figure(fig, run.caption(f"Figure 3.1: dense recall@{ks[-1]} per encoder and corpus"),
               run_name=run.name, save_as=run.run_dir / "recall.png")
'''),
    md("""
## SciFact

The same encoders on a public benchmark, through `memory_lab.beir` (each
document one passage, metrics from `ir_measures`). Each encoder's BEIR run
writes its own run directory, named in the table.
"""),
    code('''
scifact = ex.repo_path(scifact_dir)
if not (scifact / "corpus.jsonl").is_file():
    beir_rows = []
    print(f"SciFact not found at {scifact}; this section is empty in this build.")
else:
    if scifact_docs is not None:
        scifact = ex.beir_subset(scifact, ex.repo_path(runs_root) / "data",
                                 max_queries=scifact_queries or 300, max_docs=scifact_docs)
    beir_rows = ex.beir_embedding_rows(conn, base, scifact, embedders, runs_root=runs_root,
                                       max_queries=scifact_queries, progress=False)
    run.write_rows("scifact", beir_rows)
    scope = f"subset of {scifact_docs} documents" if scifact_docs else "full corpus"
    ex.show_table(beir_rows, run.caption(f"Table 3.3: SciFact test, dense only ({scope})"),
                  columns=["embedder", "queries", "nDCG@10", "R@100", "RR@10", "run"])
'''),
    code('''
run.finish()
if beir_rows:
    ex.show_table(beir_rows, run.caption("Table 3.4: SciFact query latency (p50, ms)"),
                  columns=["embedder", "p50_ms"])
''', IGNORE),
    md("""
## Reading the result

Recall here is the dense path alone; the pipeline fuses it with BM25 (chapter 4),
so an encoder that loses here may still add what the lexical path misses. The
fixture has about forty tasks, so a difference of one or two tasks moves recall
by several points; read the fixture columns as a sanity check and the world and
SciFact columns as the comparison. Latency and indexing time were measured on
this machine with whatever else was running and are not portable numbers. A
published leaderboard score for an encoder is not evidence for this corpus; this
table is, within its size.
"""),
]

# -- 04 ---------------------------------------------------------------------------------------

CH04 = [
    md("""
# 4. Fusion: two rankings into one

The lexical path (BM25 computed in SQL) and the dense path (pgvector cosine)
rank on scales that cannot be added. Reciprocal rank fusion combines ranks
instead; a convex blend of min-max normalised scores is the alternative. This
chapter compares each path alone, RRF over a sweep of its constant k, blends
over a sweep of the dense weight, and the budget question: giving each path `d`
candidates (a union up to 2d) is not the same as giving the pipeline `d`.

Nothing is read here: the measures are source-level recall at k of the fused
list, its reciprocal rank, and the share of expected sources admitted to the
reader's context under the default budget.
"""),
    parameters('''
corpus_dir = "fixtures/history"
tasks_path = "fixtures/tasks.json"
index_name = "book_fixture"
embedder = "minilm"
reader = "extractive"         # only its tokenizer is used (for the context budget)
depth = 30                    # candidates per path
rrf_ks = [1, 10, 30, 60, 100]
blend_weights = [0.3, 0.5, 0.7]
task_limit = None
ks = [1, 5, 10]
''' + COMMON),
    setup(["corpus_dir", "tasks_path", "index_name", "embedder", "reader", "depth", "rrf_ks",
           "blend_weights", "task_limit", "ks", "runs_root"], '''
base = Config(index=index_name).with_overrides(embedder={"name": embedder}, reader={"name": reader})
ex.index_corpus(conn, base, corpus_dir)
tasks = ex.load_task_subset(tasks_path, limit=task_limit, needs_sources=True)
run = ex.start_study(runs_root, "fusion", PARAMETERS, corpora={"corpus": ex.repo_path(corpus_dir)},
                     tasks_path=ex.repo_path(tasks_path))
variants = ex.fusion_variants(depth, rrf_ks, blend_weights)
print(f"{len(tasks)} tasks with expected sources; {len(variants)} variants")
'''),
    code('''
rows = ex.run_variants(conn, base, tasks, variants, reader=ex.reader_for(reader, base), ks=ks,
                       run=run, progress=False)
run.write_rows("cases", rows)
quality = [f"fused_R@{k}" for k in ks] + ["fused_RR", "admitted_recall", "union_size"]
summary = ex.summarise(rows, ["variant"], quality)
run.write_rows("summary", summary)
ex.show_table(summary, run.caption("Table 4.1: fused-list quality per variant (means over tasks); "
                                   "union size is the real candidate budget"))
'''),
    code('''
sweep = [r for r in summary if r["variant"].startswith("rrf k=")]
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
left.plot([int(r["variant"].split("=")[1]) for r in sweep], [r["fused_RR"] for r in sweep], marker="o")
left.set_xscale("log")
left.set_xlabel("RRF constant k")
left.set_ylabel("mean reciprocal rank (fused)")
names = [r["variant"] for r in summary if not r["variant"].startswith("rrf k=")]
values = [r[f"fused_R@{ks[1]}"] or 0 for r in summary if not r["variant"].startswith("rrf k=")]
right.barh(names, values)
right.set_xlabel(f"source recall@{ks[1]} (fused)")
right.set_xlim(0, 1.05)
fig.tight_layout()
ex.show_figure(fig, run.caption("Figure 4.1: the RRF constant (left) and the other variants (right)"),
               run_name=run.name, save_as=run.run_dir / "fusion.png")
'''),
    code('''
latency = ex.summarise(rows, ["variant"], ["lexical_ms", "dense_ms", "fused_ms", "search_ms"], digits=1)
ex.show_table(latency, run.caption("Table 4.2: mean stage latency per variant (ms, this machine)"))
run.finish()
''', IGNORE),
    md("""
## Reading the result

Single-path rows show what each path finds alone; a fused row better than both
means the paths find different things. RRF's k changes how much a first place
counts against agreement lower down; a flat curve means the choice hardly
matters on this task set. The two budget rows separate "hybrid is better" from
"hybrid looked at more candidates".

What it does not establish: recall of expected *files* at the fused stage is a
proposal, not what the reader saw (the admitted column is closer to that), and
the fixture's tasks are few. Tuning k or the blend weight on these same tasks and
reporting the best value would be tuning on the test set; the ladder's `best`
condition tunes on the dev split only.
"""),
]

# -- 05 ---------------------------------------------------------------------------------------

CH05 = [
    md("""
# 5. Reranking: a second model reads the candidates

A reranker scores query and passage together, which a bi-encoder cannot, at the
price of one model evaluation per candidate. It earns its place only if the
evidence *admitted* under a fixed budget improves enough to pay for the latency.
Each reranker runs over the head of the fused list at several passage truncation
lengths: text beyond the cut cannot influence the score, even when the reader
would later see it.
"""),
    parameters('''
corpus_dir = "fixtures/history"
tasks_path = "fixtures/tasks.json"
index_name = "book_fixture"
embedder = "minilm"
reader = "extractive"         # only its tokenizer is used (for the context budget)
rerankers = ["none", "cross-encoder", "llm-qwen-0.5b"]
truncations = [128, 256, 512] # passage tokens the reranker sees
top_n = 20                    # head of the fused list that is rescored
task_limit = None
ks = [1, 3, 6]
''' + COMMON),
    setup(["corpus_dir", "tasks_path", "index_name", "embedder", "reader", "rerankers", "truncations",
           "top_n", "task_limit", "ks", "runs_root"], '''
base = Config(index=index_name).with_overrides(embedder={"name": embedder}, reader={"name": reader})
ex.index_corpus(conn, base, corpus_dir)
tasks = ex.load_task_subset(tasks_path, limit=task_limit, needs_sources=True)
usable, missing = ex.usable_rerankers(rerankers)
for name, reason in missing.items():
    print(f"left out, not usable in this installation: {name}: {reason}")
run = ex.start_study(runs_root, "rerank", PARAMETERS, corpora={"corpus": ex.repo_path(corpus_dir)},
                     tasks_path=ex.repo_path(tasks_path))
variants = ex.rerank_variants(usable, truncations, top_n)
'''),
    code('''
rows = ex.run_variants(conn, base, tasks, variants, reader=ex.reader_for(reader, base), ks=ks,
                       run=run, progress=False)
run.write_rows("cases", rows)
summary = ex.summarise(rows, ["variant"], [f"reranked_R@{k}" for k in ks] + ["reranked_RR",
                                                                            "admitted_recall"])
run.write_rows("summary", summary)
ex.show_table(summary, run.caption("Table 5.1: ranking quality after reranking and admitted "
                                   "evidence, per reranker and truncation (means over tasks)"))
'''),
    code('''
cost = ex.summarise(rows, ["variant"], ["reranked_ms", "search_ms"], digits=1)
run.write_rows("latency", cost)
ex.show_table(cost, run.caption("Table 5.2: reranking latency per query (ms, this machine)"))
''', IGNORE),
    code('''
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for quality_row, cost_row in zip(summary, cost, strict=True):
    ax.scatter(max(cost_row["reranked_ms"] or 0, 0.01), quality_row["admitted_recall"] or 0)
    ax.annotate(quality_row["variant"], (max(cost_row["reranked_ms"] or 0, 0.01),
                                          quality_row["admitted_recall"] or 0),
                fontsize=7, xytext=(3, 3), textcoords="offset points")
ax.set_xscale("log")
ax.set_xlabel("reranking time per query (ms, log scale)")
ax.set_ylabel("expected sources admitted (mean)")
fig.tight_layout()
ex.show_figure(fig, run.caption("Figure 5.1: admitted evidence against reranking latency"),
               run_name=run.name, save_as=run.run_dir / "quality_latency.png")
run.finish(rerankers_left_out=missing)
''', IGNORE),
    md("""
## Reading the result

`none` is the fused order passed through; a reranker row above it on admitted
recall is an improvement the reader can use, one above it only on reciprocal
rank reorders passages that were admitted anyway. The truncation rows show
whether a qualification late in a passage matters to the score.

What it does not establish: the figure's horizontal axis was measured on this
machine; small LLM rerankers on two cores are slow, and their quality here says
nothing about larger ones. With few tasks, a difference of one task is noise.
"""),
]

# -- 06 ---------------------------------------------------------------------------------------

CH06 = [
    md("""
# 6. Context: what the reader is given

Retrieval proposes; context assembly decides. This chapter holds the retrieval
fixed and varies one context setting at a time around the default: how many
passages, how many prompt tokens (counted with the reader's own tokenizer over
the whole rendered prompt), the order passages are shown in (rank order, best
at the edges with the weakest in the middle, or by date), and a per-source quota
that stops one file's overlapping chunks from filling the budget. Each task is
read and scored by the instrument.
"""),
    parameters('''
corpus_dir = "fixtures/history"
tasks_path = "fixtures/tasks.json"
index_name = "book_fixture"
embedder = "minilm"
reader = "qwen-1.5b"
passage_limits = [1, 2, 4, 6, 8, 10]
token_budgets = [750, 1500, 3000, 4500]
orders = ["rank", "best-at-edges", "date"]
quotas = [None, 1, 2]
task_limit = None
''' + COMMON),
    setup(["corpus_dir", "tasks_path", "index_name", "embedder", "reader", "passage_limits",
           "token_budgets", "orders", "quotas", "task_limit", "runs_root"], '''
base = Config(index=index_name).with_overrides(embedder={"name": embedder}, reader={"name": reader})
ex.index_corpus(conn, base, corpus_dir)
tasks = ex.load_task_subset(tasks_path, limit=task_limit)
run = ex.start_study(runs_root, "context", PARAMETERS, corpora={"corpus": ex.repo_path(corpus_dir)},
                     tasks_path=ex.repo_path(tasks_path))
default_context = {"max_passages": base.context.max_passages, "token_budget": base.context.token_budget,
                   "order": base.context.order, "per_source_quota": base.context.per_source_quota}
variants = ex.context_variants(passage_limits, token_budgets, orders, quotas, default_context)
print(f"{len(tasks)} tasks x {len(variants)} variants, reader {reader}")
'''),
    code('''
rows = ex.context_study(conn, base, tasks, variants, reader_name=reader, run=run, progress=False)
run.write_rows("cases", rows)
quality = ["passed", "admitted_recall", "admitted_passages", "prompt_tokens", "duplicate_drops",
           "budget_drops", "quota_drops", "wasted_share"]
summary = ex.summarise(rows, ["variant"], quality)
run.write_rows("summary", summary)
ex.show_table(summary, run.caption(f"Table 6.1: pass rate, admitted evidence and budget use per "
                                   f"context variant (reader {reader}; means over tasks)"))
'''),
    code('''
fig, axes = plt.subplots(1, 4, figsize=(11, 3.2), sharey=True)
for ax, factor in zip(axes, ["passages", "tokens", "order", "per-source"], strict=True):
    part = [r for r in summary if ex.sweep_factor(r["variant"])[0] == factor]
    labels = [ex.sweep_factor(r["variant"])[1] for r in part]
    ax.plot(labels, [r["passed"] for r in part], marker="o", label="passed")
    ax.plot(labels, [r["admitted_recall"] or 0 for r in part], marker="s", label="evidence admitted")
    ax.set_title(factor, fontsize=9)
    ax.set_ylim(0, 1.05)
    ax.tick_params(axis="x", labelsize=7, rotation=30)
axes[0].legend(fontsize=7, loc="lower right")
fig.tight_layout()
ex.show_figure(fig, run.caption("Figure 6.1: one context setting at a time: pass rate and admitted "
                                "evidence"), run_name=run.name, save_as=run.run_dir / "context.png")
'''),
    code('''
cost = ex.summarise(rows, ["variant"], ["reader_seconds", "completion_tokens"], digits=2)
ex.show_table(cost, run.caption("Table 6.2: reading cost per variant (seconds per task on this "
                                "machine; cached answers cost nothing)"))
run.finish()
''', IGNORE),
    md("""
## Reading the result

More passages and more tokens admit more evidence; whether the pass rate follows
is a property of the reader, and a curve that rises and then falls is the reader
being distracted by what it was given. Order effects are measured with *this*
reader; a position effect found in other models' long-context studies is a
reason to test it here, not a result about it. The quota rows show how often one
file's overlapping chunks took slots another source needed.

What it does not establish: one-factor sweeps miss interactions (a larger budget
may need a different order); the extractive reader used in quick builds is not
position sensitive by construction, so order effects only mean something with an
LLM reader.
"""),
]

# -- 07 ---------------------------------------------------------------------------------------

CH07 = [
    md("""
# 7. The ladder: every condition, every question type

The evaluation harness (`memory_lab.evaluation`) runs each condition over
the task file and lets the instrument score every case. The conditions form a
ladder: no project history at all; each retrieval path alone; hybrid; hybrid
with a reranker; `best` (tuned on the dev split only); and three references that
bypass retrieval: the evidence spans themselves, the whole expected files, and as
much of the full history as fits the reader's window. The gap between a
retrieval rung and the oracle rungs is what better retrieval could still win;
the gap between the oracles and a perfect score belongs to the reader and the
task.
"""),
    parameters('''
corpus_dir = "fixtures/history"
tasks_path = "fixtures/tasks.json"
index_name = "book_fixture"
embedder = "minilm"
reader = "qwen-1.5b"
reranker = "llm-qwen-0.5b"
conditions = ["no-memory", "lexical", "dense", "hybrid", "hybrid-reranked", "best",
              "oracle-span", "oracle-source", "full-history"]
task_limit = None             # a number: a subset spread over question types and splits
''' + COMMON),
    setup(["corpus_dir", "tasks_path", "index_name", "embedder", "reader", "reranker", "conditions",
           "task_limit", "runs_root"], project=("from memory_lab import evaluation",
                                                "from memory_baseline.config import Config"),
          extra='''
base = Config(index=index_name).with_overrides(embedder={"name": embedder}, reader={"name": reader})
task_file = ex.repo_path(tasks_path)
if task_limit is not None:
    task_file = ex.write_task_subset(task_file, ex.repo_path(runs_root) / "task-subsets", limit=task_limit)
'''),
    code('''
run_dir = evaluation.run_evaluation(conn, base, task_file, ex.repo_path(corpus_dir), conditions,
                                    runs_root=ex.repo_path(runs_root), reader_name=reader,
                                    reranker_name=reranker, progress=False)
manifest, cases = evaluation.load_run(run_dir)
print(f"{len(cases)} cases in {ex.display_path(run_dir)}")
''', IGNORE),
    code('''
summary = evaluation.summary_rows(evaluation.report(run_dir))
types = [t for t in ["locate", "outcome", "provenance", "temporal", "obligations", "downstream"]
         if any(r["question_type"] == t for r in summary)]
grid = []
for condition in conditions:
    cells = {r["question_type"]: r for r in summary if r["condition"] == condition}
    grid.append({"condition": condition, **{t: cells[t]["pass_rate"] if t in cells else None for t in types},
                 "all": next((r["pass_rate"] for r in summary if r["condition"] == condition
                              and r["question_type"] not in types), None)})
ex.show_table(grid, ex.run_caption(run_dir, "Table 7.1: pass rate per condition and question type "
                                            f"(reader {reader})"))
'''),
    code('''
import numpy as np

matrix = np.array([[row[t] if row[t] is not None else np.nan for t in types] for row in grid], dtype=float)
fig, ax = plt.subplots(figsize=(8, 0.45 * len(grid) + 1.2))
image = ax.imshow(matrix, vmin=0, vmax=1, cmap="viridis", aspect="auto")
ax.set_xticks(range(len(types)), types, rotation=20, fontsize=8)
ax.set_yticks(range(len(grid)), [row["condition"] for row in grid], fontsize=8)
for (i, j), value in np.ndenumerate(matrix):
    if not np.isnan(value):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7,
                color="white" if value < 0.6 else "black")
fig.colorbar(image, ax=ax, label="pass rate")
fig.tight_layout()
ex.show_figure(fig, ex.run_caption(run_dir, "Figure 7.1: the ladder, pass rate per condition and "
                                            "question type"), run_name=ex.display_path(run_dir),
               save_as=run_dir / "ladder.png")
'''),
    code('''
recall = [{"condition": r["condition"], "recall_candidates": r["mean_recall_candidates"],
           "recall_admitted": r["mean_recall_admitted"], "mrr_candidates": r["mean_mrr_candidates"]}
          for r in summary if r["question_type"] not in types]
ex.show_table(recall, ex.run_caption(run_dir, "Table 7.2: expected sources among the candidates and "
                                              "among the admitted passages, per condition"))
'''),
    code('''
cost = ex.ladder_cost_rows(cases)
ex.show_table(cost, ex.run_caption(run_dir, "Table 7.3: cost per condition: mean prompt and completion "
                                            "tokens, reader calls, wall seconds, answer-cache hits"))
''', IGNORE),
    md("""
## Reading the result

Compare along the ladder, not across the whole table: `hybrid` against each
single path (what fusion adds), `hybrid-reranked` against `hybrid` (what the
reranker adds, and in Table 7.3 what it costs), the oracle rungs against the
retrieval rungs (what retrieval still loses), and `no-memory` against all of
them (what the model answers without the project's history, which is not zero:
the model keeps its training). `full-history` shows how far simply admitting
more history goes within the reader's window, at its token price.

What it does not establish: a pass is the instrument's deterministic check of
phrasings and sources, not a judgement of the whole answer; a question type with
three tasks has a pass rate in steps of a third. The tasks of the fixture were
written by the same project that built the system. `best` was tuned on the dev
split, so its dev-task scores are not held out.
"""),
]

# -- 08 ---------------------------------------------------------------------------------------

CH08 = [
    md("""
# 8. Where the evidence was lost

A wrong answer is a symptom; the stage traces say where it began. For each task
the ladder's chosen condition failed, this chapter follows every expected
source through the pipeline and names the first stage it did not pass:

- **never indexed**: the file is not in the index;
- **not a candidate**: neither the lexical nor the dense path returned it;
- **fused out**: a path found it, but fusion ranked it below what the next stage
  looked at (the reranker's head, or the passages assembly considered);
- **reranked out**: it reached the reranker's head and was pushed below what
  assembly considered;
- **not admitted**: assembly considered it and dropped it (budget, duplicate,
  quota);
- **admitted but misread**: the reader had it and the answer still failed.

The task's stage is the earliest loss among its expected sources. The trace is
rebuilt by rerunning retrieval and assembly with the condition's recorded
configuration; the `trace_matches` column says whether the rerun admitted the
same sources as the recorded case.
"""),
    parameters('''
ladder_run = None             # a run directory; None: the latest complete ladder run under runs_root
condition = "hybrid"
show_traces = 3
''' + COMMON),
    setup(["ladder_run", "condition", "show_traces", "runs_root"], imports=("import json",), project=(),
          extra='''
run_dir = ex.repo_path(ladder_run) if ladder_run else ex.latest_run(runs_root)
if run_dir is None:
    raise ValueError(f"no complete ladder run under {runs_root}: run chapter 7 first")
print(f"diagnosing condition {condition!r} of {ex.display_path(run_dir)}")
'''),
    code('''
rows, traces = ex.diagnose_run(conn, run_dir, condition, progress=False)
counts = [{"stage": stage, "tasks": sum(1 for r in rows if r["stage"] == stage)} for stage in ex.LOSS_STAGES]
ex.show_table(counts, ex.run_caption(run_dir, f"Table 8.1: failed tasks of condition `{condition}` by the "
                                              "stage where the evidence was lost"))
'''),
    code('''
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.barh([c["stage"] for c in counts][::-1], [c["tasks"] for c in counts][::-1], color="tab:purple")
ax.set_xlabel("failed tasks")
fig.tight_layout()
ex.show_figure(fig, ex.run_caption(run_dir, f"Figure 8.1: where `{condition}` lost the evidence of its "
                                            "failed tasks"), run_name=ex.display_path(run_dir))
'''),
    code('''
table = [{"task": r["task"], "type": r["question_type"], "outcome": r["outcome"], "stage": r["stage"],
          "per source": "; ".join(f"{s}: {v}" for s, v in r["per_source"].items()) or "(none expected)",
          "trace_matches": r["trace_matches"]} for r in rows]
ex.show_table(table, ex.run_caption(run_dir, "Table 8.2: every failed task, with the stage of each "
                                             "expected source"))
'''),
    code('''
for task_id in list(traces)[:show_traces]:
    print(f"--- {task_id}")
    print(json.dumps(traces[task_id], indent=1, ensure_ascii=False)[:2500])
'''),
    md("""
## Reading the result

Each stage points at a different repair. *Never indexed* is an ingest or corpus
problem. *Not a candidate* belongs to the retrieval paths (lexical terms,
identifiers, the encoder). *Fused out* and *reranked out* belong to ranking.
*Not admitted* belongs to the budget and deduplication. Only *admitted but
misread* points at the reader, or at the task.

What it does not establish: the trace shows what the reader was given, not what
it understood. "Admitted but misread" includes answers that were right in
substance but missed the instrument's required phrasing, and tasks whose
evidence is spread over several files where one was admitted and another was
not needed. A repeatable pattern here is a reason to improve that stage of
ordinary retrieval first; it is not, by itself, a reason for a new kind of
memory.
"""),
]

# -- 09 ---------------------------------------------------------------------------------------

CH09 = [
    md("""
# 9. The reader's ceiling

Retrieval cannot repair a reader that misreads the right sources. This chapter
takes retrieval out and gives the reader perfect evidence: under
`oracle-source` the task's expected files whole, under `oracle-span` each
evidence quote with a sentence of context. Whatever still fails is reading.

Each reading style is a named reader configuration (`ReaderConfig.style`,
`memory_baseline.reading`), measured against the plain prompt, which stays as
the control:

- **plain**: the one plain prompt, a free-text answer;
- **dated**: the question's as-of date first, each passage headed by its id,
  kind and the date it states, passages oldest first when the question has a
  date, and the outcomes to tell apart named in the instructions;
- **structured**: the dated prompt, decoded under a grammar: quoted evidence
  first (each source from an enum of the admitted ids), then the answer and a
  status (decided, proposed, rejected, superseded, open, done); a work request
  gets its artifact as a fenced block after the JSON;
- **two-step**: one constrained call extracts quoted claims, a second answers
  from them, dated and oldest first (two model calls).

The same style runs on the canonical fixture and on generated worlds. The
default style is chosen on the fixture's dev tasks only; the test tasks are
reported, not consulted.
"""),
    parameters('''
corpus_dir = "fixtures/history"
tasks_path = "fixtures/tasks.json"
fixture_task_limit = None    # None: every fixture task
world_seeds = [7, 11]        # one generated world per seed
world_docs = 60
world_task_limit = 6         # spread over question types
styles = ["plain", "structured", "dated", "two-step"]
conditions = ["oracle-source", "oracle-span"]
reader = "qwen-1.5b"
index_name = "book_reader"   # one schema per corpus: <index_name>_<corpus>
worlds_root = "runs/book/worlds"
''' + COMMON),
    setup(["corpus_dir", "tasks_path", "fixture_task_limit", "world_seeds", "world_docs",
           "world_task_limit", "styles", "conditions", "reader", "index_name", "worlds_root",
           "runs_root"], '''
corpora = {"fixture": (ex.repo_path(corpus_dir), ex.repo_path(tasks_path), fixture_task_limit)}
for seed in world_seeds:
    world = ex.prepare_world(worlds_root, seed=seed, docs=world_docs)
    corpora[f"world_s{seed}"] = (world.history, world.tasks_path, world_task_limit)
config = Config(index=index_name).with_overrides(reader={"name": reader})
''', project=("from memory_lab import reader_study as rs",
             "from memory_baseline.config import Config")),
    md("""
## The study

One evaluation run per corpus, condition and style, each scored by the
instrument and listed in the study's manifest. Answers the reader has given
before come from the answer cache; the cost columns keep what the model took
when it ran.
"""),
    code('''
study = rs.run_reader_study(conn, config, corpora, styles, conditions=conditions, runs_root=runs_root,
                            progress=False)
print(f"{len(study.manifest['runs'])} evaluation runs in {study.name}")
''', IGNORE),
    md("""
## Pass rate and cost per style

One row per corpus, condition and style, over all its tasks. `cited_outside_context`
counts citations in the returned answers that name a source the reader was not
given (enforced to be zero); `citations_removed` counts those the model wrote and
the reader removed before returning. Seconds are model seconds per answer on this
machine. The pass rates depend on the model runtime's arithmetic, so their cell
output is not compared between machines.
"""),
    code('''
overall = [r for r in rs.ceiling_rows(study.run_dir) if r["question_type"] == "all"]
study.write_rows("ceiling", rs.ceiling_rows(study.run_dir))
ex.show_table(overall, study.caption("Table 9.1: pass rate with oracle context and cost per answer, per "
                                     "corpus, condition and reading style"))
''', IGNORE),
    code('''
fig = rs.ceiling_figure(rs.ceiling_rows(study.run_dir), styles, plt)
ex.show_figure(fig, study.caption("Figure 9.1: pass rate with oracle context per reading style and "
                                  "question type"), run_name=study.name,
               save_as=study.run_dir / "ceiling.png")
''', IGNORE),
    md("""
## Choosing the default on the dev tasks

The default style is the one with the highest pass rate on the fixture's dev
tasks under `oracle-source` (fewer seconds per answer breaks a tie). The test
tasks show whether the choice holds on questions it was not chosen on.
"""),
    code('''
fixture_condition = conditions[0]
choice = rs.choose_style(study.run_dir, condition=fixture_condition) if "fixture" in corpora else None
study.record("dev_choice", choice)
by_split = [r for r in rs.ceiling_rows(study.run_dir, by=("split",))
            if r["corpus"] == "fixture" and r["split"] != "all"]
print("chosen on dev:", choice and choice["style"], "| configured default:", Config().reader.style)
ex.show_table(by_split, study.caption("Table 9.2: fixture pass rate per style on the dev and test splits"))
''', IGNORE),
    code('''
misses = [r for r in rs.outcome_rows(study.run_dir)
          if not r["passed"] and r["corpus"] == "fixture" and r["style"] == Config().reader.style]
ex.show_table(misses, study.caption(f"Table 9.3: fixture cases the default style "
                                    f"(`{Config().reader.style}`) still fails with oracle context"))
''', IGNORE),
    md("""
## Reading the result

The oracle rows bound what any retrieval improvement can buy with this reader:
a question type that fails with its expected files in hand fails for reading,
and a better ranker will not move it. The difference between `oracle-source`
and `oracle-span` is the cost of reading whole files instead of the sentences
that matter.

What it does not establish: a pass is the instrument's phrase and source check,
not a judgement of the whole answer; the structured styles render a `Status:`
line from a field the model chose, which the phrase checks can match, and the
quotes they extract are kept out of the scored text. Question types with a
handful of tasks move in large steps. The worlds are generated from templates,
so their phrasing is more regular than a real project's. All figures come from
one small model on two CPU cores; a larger reader may need none of this.
"""),
]

CHAPTERS = {
    "01_ingest": CH01,
    "02_chunking": CH02,
    "03_embeddings": CH03,
    "04_fusion": CH04,
    "05_reranking": CH05,
    "06_context": CH06,
    "07_ladder": CH07,
    "08_failures": CH08,
    "09_reader": CH09,
}


def build(target: Path = HERE) -> list[Path]:
    written = []
    for name, cells in CHAPTERS.items():
        notebook = new_notebook(cells=cells, metadata={
            "kernelspec": KERNEL,
            "language_info": {"name": "python"},
        })
        for index, cell in enumerate(notebook.cells):
            cell["id"] = f"{name[:2]}-{index:02d}"
        nbformat.validate(notebook)
        path = target / f"{name}.ipynb"
        path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(path)
