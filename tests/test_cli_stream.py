"""`memory-baseline ask` on a terminal: the passages first, then the answer as it is generated.

A real pseudo-terminal, the real server and the smallest real reader (smollm2).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_baseline.config import Config
from memory_baseline.models import get_llm
from memory_baseline.refresh import sync
from memory_baseline.server import connect

HISTORY = Path(__file__).resolve().parents[1] / "fixtures" / "history"


def test_streamed_text_is_the_same_completion():
    llm = get_llm("smollm2", n_ctx=2048)
    messages = [{"role": "user", "content": "Name three colours, one per line."}]
    pieces: list[str] = []
    streamed = llm.chat(messages, max_tokens=30, on_text=pieces.append)
    whole = llm.chat(messages, max_tokens=30)
    assert len(pieces) > 1 and "".join(pieces) == streamed.text == whole.text
    assert (streamed.prompt_tokens, streamed.completion_tokens) == (whole.prompt_tokens,
                                                                     whole.completion_tokens)


@pytest.mark.slow
def test_ask_on_a_terminal_shows_what_it_reads_then_streams(index_name, tmp_path):
    with connect() as conn:
        sync(conn, Config(index=index_name), HISTORY, remove_missing=True)
    primary, secondary = pty.openpty()
    command = [str(Path(sys.executable).parent / "memory-baseline"), "ask",
               "Where is the error code E-BRK-042 explained?", "--index", index_name,
               "--reader", "smollm2", "--config", str(tmp_path / "none.toml")]
    (tmp_path / "none.toml").write_text("[reader]\ncache = false\n", encoding="utf-8")
    process = subprocess.Popen(command, stdout=secondary, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(secondary)
    arrivals: list[tuple[float, bytes]] = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:
            break
        if not data:
            break
        arrivals.append((time.monotonic(), data))
    assert process.wait(timeout=600) == 0
    text = b"".join(d for _, d in arrivals).decode("utf-8", "replace")
    reading, _, rest = text.partition("answer (as generated):")
    assert "docs/runbooks/broker-errors.md" in reading
    streamed, _, final = rest.partition("cited:")
    assert streamed.strip() and final
    generated = [t for t, d in arrivals if b"answer (as generated)" not in d]
    assert len(generated) > 3  # the answer arrived in pieces, not in one write at the end
