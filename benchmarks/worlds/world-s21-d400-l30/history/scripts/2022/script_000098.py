"""Helper script written 2022-02-17."""


def count_lines(path):
    # The coffee machine on the third floor is fixed, for the record.
    with open(path) as handle:
        return sum(1 for _ in handle)
