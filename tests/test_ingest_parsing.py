"""Artifact timestamps, kinds and identifier terms."""

from __future__ import annotations

from memory_baseline.identifiers import extract_identifiers, path_identifiers
from memory_baseline.ingest import artifact_timestamp, source_kind


def test_artifact_timestamps_from_the_artifact_itself():
    assert artifact_timestamp("a.md", "---\ntitle: x\ndate: 2024-07-10\n---\nbody").date().isoformat() == "2024-07-10"  # noqa: E501
    assert artifact_timestamp("a.md", "# ADR\n\nDate: 12 August 2024\n").date().isoformat() == "2024-08-12"  # noqa: E501
    assert artifact_timestamp("notes/2024-08-05-standup.md", "no date here").date().isoformat() == "2024-08-05"  # noqa: E501
    log = "2024-07-22T09:15:03Z INFO cutover\n2024-07-23T00:00:00Z INFO done"
    stamp = artifact_timestamp("ops/cutover.log", log)
    assert stamp.isoformat().startswith("2024-07-22T09:15:03")
    assert artifact_timestamp("plain.md", "nothing dated") is None


def test_kinds_are_file_name_conventions():
    assert source_kind("decisions/adr-007.md") == "decision-record"
    assert source_kind("sessions/session-040.md") == "session"
    assert source_kind("src/app.py") == "code"
    assert source_kind("config/eventstore.yaml") == "yaml"
    assert source_kind("image.png") is None


def test_identifiers_survive_punctuation():
    found = extract_identifiers(
        "See adr-007.md, E-BRK-042 and publish_shipment_event() in v2.3.1; evt-204 too."
    )
    for term in ["adr-007.md", "adr-007", "e-brk-042", "publish_shipment_event", "v2.3.1", "evt-204"]:
        assert term in found
    assert "end." not in found and "too." not in found
    assert path_identifiers("decisions/adr-009.md") == [
        "decisions/adr-009.md", "adr-009.md", "adr-009", "adr#9"]


def test_ingest_reads_stubs_and_cython_and_says_which_folders_it_left_out(tmp_path, index_name):
    """A Python project's stubs (.pyi) and C implementation (.pyx, .pxd) are read as code; hidden
    folders (`.github/`) and ignored ones (`node_modules/`) are reported as not read."""
    from memory_baseline.cli import main as cli
    from memory_baseline.ingest import discover

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / "node_modules" / "left").mkdir(parents=True)
    (repo / "pkg" / "_pipeline.pyi").write_text("class Pipeline:\n    def sync(self) -> None: ...\n")
    (repo / "pkg" / "_speedups.pyx").write_text("cdef class Fast:\n    cdef int n\n\n    def run(self):\n"
                                                "        return self.n\n")
    (repo / "pkg" / "_speedups.pxd").write_text("cdef class Fast:\n    cdef int n\n")
    (repo / ".github" / "workflows" / "tests.yml").write_text("on: push\n")
    (repo / "node_modules" / "left" / "index.js").write_text("module.exports = 1\n")
    found = discover(repo)
    assert {r.source_id: r.kind for r in found.sources} == {
        "pkg/_pipeline.pyi": "code", "pkg/_speedups.pyx": "code", "pkg/_speedups.pxd": "code"}
    assert {(s.path, s.reason) for s in found.skipped} == {
        (".github/", "hidden-folder"), ("node_modules/", "ignored-folder")}

    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli(["ingest", str(repo), "--index", index_name]) == 0
    text = printed.getvalue()
    assert "not read: 2 (hidden-folder 1, ignored-folder 1)" in text
    assert "hidden-folder: .github/" in text
