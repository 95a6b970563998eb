"""Helper script written 2022-06-02."""


def count_lines(path):
    # Reviewed open pull requests for the payments service; two merged, one waiting on tests.
    with open(path) as handle:
        return sum(1 for _ in handle)
