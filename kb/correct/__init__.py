"""Correct: draft minimal edits, version documents, the human review queue."""
