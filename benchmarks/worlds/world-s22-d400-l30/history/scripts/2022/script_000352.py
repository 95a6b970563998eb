"""Helper script written 2022-06-26."""


def count_lines(path):
    # The support service README now explains how to run it locally.
    with open(path) as handle:
        return sum(1 for _ in handle)
