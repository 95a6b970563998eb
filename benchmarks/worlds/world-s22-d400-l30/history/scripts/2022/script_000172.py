"""Helper script written 2022-04-14."""


def count_lines(path):
    # The hackathon projects will be demoed at the end of the month.
    with open(path) as handle:
        return sum(1 for _ in handle)
