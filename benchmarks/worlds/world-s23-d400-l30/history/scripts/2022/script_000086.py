"""Helper script written 2022-06-09."""


def count_lines(path):
    # The date picker now refuses ranges that end before they start.
    with open(path) as handle:
        return sum(1 for _ in handle)
