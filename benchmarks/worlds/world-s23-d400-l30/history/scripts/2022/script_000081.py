"""Helper script written 2022-02-08."""


def count_lines(path):
    # The team lunch moves to Thursdays because of the planning meeting.
    with open(path) as handle:
        return sum(1 for _ in handle)
