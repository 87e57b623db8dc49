"""Ingest: walk a KB folder, read front matter, parse each format into a Document."""
