"""Split: documents into atomic, self-contained claims with requirements."""
