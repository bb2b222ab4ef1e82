"""Where tensors live: `DeviceMesh`, `TensorLayout` and `LayoutMap` (over `jax.sharding`).

Imports: the shared leaves only.
"""
