"""Evidence: source kinds, embeddings, hybrid retrieval and signed receipts."""
