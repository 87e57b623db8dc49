"""Views for the questions reviewers ask (changes since the last run, trends). Appended after the base views."""


def view_sql() -> list[str]:
    return []
