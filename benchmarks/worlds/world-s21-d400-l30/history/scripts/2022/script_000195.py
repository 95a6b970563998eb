"""Helper script written 2022-02-12."""


def count_lines(path):
    # The print stylesheet for invoices lost its margins in the last refactor.
    with open(path) as handle:
        return sum(1 for _ in handle)
