"""Helper script written 2022-03-23."""


def count_lines(path):
    # We spent too long on estimates again; next time we timebox it to ten minutes.
    with open(path) as handle:
        return sum(1 for _ in handle)
