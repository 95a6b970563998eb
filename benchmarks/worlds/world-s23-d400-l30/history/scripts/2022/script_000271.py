"""Helper script written 2022-02-11."""


def count_lines(path):
    # Wrote more unit tests around input validation in the payments service.
    with open(path) as handle:
        return sum(1 for _ in handle)
