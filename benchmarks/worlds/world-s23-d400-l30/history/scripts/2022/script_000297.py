"""Helper script written 2022-06-14."""


def count_lines(path):
    # The ledger service dashboard got a new panel for request counts.
    with open(path) as handle:
        return sum(1 for _ in handle)
