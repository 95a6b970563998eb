"""Helper script written 2022-05-30."""


def count_lines(path):
    # Refactored the loyalty service test fixtures; nothing functional changed.
    with open(path) as handle:
        return sum(1 for _ in handle)
