"""Helper script written 2022-01-10."""


def count_lines(path):
    # Someone should tidy the onboarding checklist; half the links point to old pages.
    with open(path) as handle:
        return sum(1 for _ in handle)
