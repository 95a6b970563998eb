"""Helper script written 2022-05-03."""


def count_lines(path):
    # Code owners file updated so reviews stop landing on people who left.
    with open(path) as handle:
        return sum(1 for _ in handle)
