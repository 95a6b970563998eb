"""Helper script written 2022-04-16."""


def count_lines(path):
    # Reviewed open pull requests for the warehouse service; two merged, one waiting on tests.
    with open(path) as handle:
        return sum(1 for _ in handle)
