"""Helper script written 2022-06-25."""


def count_lines(path):
    # Paired on a bug in the recommendations service where a form lost its state on reload.
    with open(path) as handle:
        return sum(1 for _ in handle)
