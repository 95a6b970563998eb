"""Helper script written 2022-02-09."""


def count_lines(path):
    # Lint warnings are errors in CI from now on, after a two-week grace period.
    with open(path) as handle:
        return sum(1 for _ in handle)
