"""Harness for downstream-e-brk-042-runbook: the on-call step for a batch rejected with E-BRK-042.

What the history decides (docs/runbooks/broker-errors.md): split the batch with
`relay split --max-bytes 262144 <batch-id>` and requeue it; do not raise the limit.
The step is run line by line against a fake relay CLI (fake_relay.py, in this
process): comments and `echo` are allowed, any other program fails the step.
"""

import shlex
import unittest
from pathlib import Path

from fake_relay import RELAY_LIMIT_BYTES, Relay, RelayError

BATCH = "b-2291"
BATCH_BYTES = 700_000  # a B2B order with hundreds of lines


def commands(script: str) -> list[list[str]]:
    joined = script.replace("\\\n", " ")
    lines = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:]
        if not line or line.startswith("#"):
            continue
        for part in line.replace("&&", ";").split(";"):
            words = shlex.split(part, comments=True)
            if words:
                lines.append(words)
    return lines


class RunbookStep(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.relay = Relay({BATCH: BATCH_BYTES})
        cls.problem = None
        try:
            for words in commands(Path("runbook.sh").read_text(encoding="utf-8")):
                if words[0] == "echo":
                    continue
                if words[0] != "relay":
                    raise RelayError(f"the step runs {words[0]!r}; only the relay CLI is available")
                cls.relay.run(words[1:])
        except (RelayError, ValueError) as exc:
            cls.problem = exc

    def test_runs_against_the_relay(self):
        """every command of the step is a valid relay command"""
        self.assertIsNone(self.problem, f"the step failed: {self.problem}")
        self.assertTrue(self.relay.calls, "the step runs no relay command")

    def test_splits_the_batch_at_the_limit(self):
        """the batch is split with --max-bytes no larger than 262144"""
        splits = [c for c in self.relay.calls if c.command == "split" and c.batch == BATCH]
        self.assertTrue(splits, f"batch {BATCH} is never split")
        self.assertLessEqual(splits[0].max_bytes, RELAY_LIMIT_BYTES)

    def test_requeues_after_splitting(self):
        """the split batch is requeued and nothing of it stays parked"""
        self.assertIsNone(self.problem, f"the step failed: {self.problem}")
        self.assertTrue(self.relay.queued, "nothing was requeued")
        self.assertEqual([b for b in self.relay.parked if b.startswith(BATCH)], [], "parts still parked")

    def test_does_not_raise_the_limit(self):
        """the relay's 256 KiB limit is left as it is"""
        self.assertEqual(self.relay.limit, RELAY_LIMIT_BYTES, "the step raises the relay's limit")


if __name__ == "__main__":
    unittest.main()
