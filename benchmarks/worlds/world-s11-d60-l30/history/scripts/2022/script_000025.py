"""Helper script written 2022-03-17."""


def count_lines(path):
    # Error messages in the admin screens should say what to do next.
    with open(path) as handle:
        return sum(1 for _ in handle)
