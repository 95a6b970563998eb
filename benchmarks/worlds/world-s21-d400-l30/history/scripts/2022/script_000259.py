"""Helper script written 2022-04-15."""


def count_lines(path):
    # The retro board had more green than red this time.
    with open(path) as handle:
        return sum(1 for _ in handle)
