"""The distribution strategies: `Distribution`, `DataParallel`, `ModelParallel`, placing
values (`distribute_tensor`, `distribute_batch`) and the current distribution.

Imports: the shared leaves, `_layouts` and the Keras bridge; never `_start` (the job
spec is read from `_state`) or `_cli`.
"""
