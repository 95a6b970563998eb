"""Shared helpers of the hostile-input tests: small corpora, a CLI run, the one-line error."""

from __future__ import annotations

from pathlib import Path

from memory_baseline import cli


def note(topic: str) -> str:
    return f"# {topic.title()}\n\nThe {topic} note records why the {topic} decision held.\n"


def corpus_of(root: Path, names: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(note(Path(name).stem.replace("-", " ")))
    return root


def cli_run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code: int, err: str, expected: int = 2) -> None:
    assert code == expected, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memory-baseline: error: "), err
    assert "Traceback" not in err
