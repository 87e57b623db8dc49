"""Views of the review workflow (edits, decisions, versions). Appended after the base views."""


def view_sql() -> list[str]:
    return []
