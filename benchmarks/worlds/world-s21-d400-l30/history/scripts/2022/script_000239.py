"""Helper script written 2022-02-26."""


def count_lines(path):
    # Pairing rotation continues; nobody wants to go back to solo tickets.
    with open(path) as handle:
        return sum(1 for _ in handle)
