"""kdist's benchmark harness: kdist vs raw JAX vs Keras, side by side in one run."""
