"""Escalate: depth routing, the deep (CoVe) verifier, its LLM client and the lessons it learns."""
