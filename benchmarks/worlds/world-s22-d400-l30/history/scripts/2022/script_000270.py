"""Helper script written 2022-06-02."""


def count_lines(path):
    # Looked at error budgets for the identity service; well within target this month.
    with open(path) as handle:
        return sum(1 for _ in handle)
