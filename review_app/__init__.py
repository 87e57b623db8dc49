"""`kbaudit review serve`: the store's review queue in the browser.

A Starlette app with Jinja2 templates and plain HTML forms (a small keyboard-shortcut script, no
build step), served by uvicorn. Everything it reads and writes goes through the same code as the
`kbaudit review` commands (kb.correct.review, the store API, kb.store.remote.writing); decisions are the same
append-only `review_decisions` rows, with origin `web`.
"""

from review_app.app import create_app, is_loopback, serve

__all__ = ["create_app", "is_loopback", "serve"]
