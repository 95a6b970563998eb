"""A fake of the webhook relay's command line (`relay`), as docs/runbooks/broker-errors.md uses it.

It knows the subcommands an operator runs on a parked batch (`split`, `requeue`,
`status`, `config set`) with the relay's options, keeps the batches in memory, and
refuses anything else the way a real CLI would: an unknown subcommand or option is an
error. The runbook step is "executed" against it line by line (see the test module);
nothing leaves this process.
"""

from __future__ import annotations

import argparse
import re

RELAY_LIMIT_BYTES = 262_144  # the relay's own batch limit (256 KiB)


class RelayError(Exception):
    """The relay refused a command."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit the process
        raise RelayError(message)


def _size(text: str) -> int:
    match = re.fullmatch(r"(\d+)\s*(k|kb|kib|m|mb|mib)?", text.strip().lower())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    unit = {None: 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1024**2, "mb": 1000**2, "mib": 1024**2}
    return int(match.group(1)) * unit[match.group(2)]


def _parser() -> _Parser:
    parser = _Parser(prog="relay")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    split = commands.add_parser("split")
    split.add_argument("--max-bytes", type=_size, required=True)
    split.add_argument("batch")
    requeue = commands.add_parser("requeue")
    requeue.add_argument("batches", nargs="+")
    status = commands.add_parser("status")
    status.add_argument("batch")
    config = commands.add_parser("config")
    config_commands = config.add_subparsers(dest="config_command", required=True, parser_class=_Parser)
    setter = config_commands.add_parser("set")
    setter.add_argument("key")
    setter.add_argument("value")
    return parser


class Relay:
    """The relay's state as far as a runbook can change it."""

    def __init__(self, parked: dict[str, int]) -> None:
        self.parked = dict(parked)  # batch id -> payload bytes
        self.queued: list[str] = []
        self.limit = RELAY_LIMIT_BYTES
        self.calls: list[argparse.Namespace] = []

    def run(self, argv: list[str]) -> None:
        args = _parser().parse_args(argv)
        self.calls.append(args)
        if args.command == "split":
            if args.batch not in self.parked:
                raise RelayError(f"no parked batch {args.batch}")
            size = self.parked.pop(args.batch)
            parts = -(-size // args.max_bytes)
            for index in range(parts):
                self.parked[f"{args.batch}.{index + 1}"] = min(args.max_bytes, size - index * args.max_bytes)
        elif args.command == "requeue":
            for batch in args.batches:
                matching = [b for b in self.parked if b == batch or b.startswith(batch + ".")]
                if not matching:
                    raise RelayError(f"no parked batch {batch}")
                for name in matching:
                    if self.parked[name] > self.limit:
                        raise RelayError(f"E-BRK-042: batch {name} is {self.parked[name]} bytes")
                    self.queued.append(name)
                    del self.parked[name]
        elif args.command == "config":
            if args.key.replace("-", "_") in ("max_bytes", "batch_limit", "max_batch_bytes"):
                self.limit = _size(args.value)
