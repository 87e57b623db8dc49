"""Training the shipped verifier: data splits, synthetic pairs, the training loop."""
