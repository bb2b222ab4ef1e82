"""The start of a job: `initialize()` and what it runs, in order.

`config` resolves and validates every setting (through the compiled core);
`environment_fingerprint` and `accelerators` describe this process; `roll_call`
runs the roll call on the coordinator's port; `seed` agrees on the job seed;
`liveness` keeps the job one unit after the start; `initialize` is the sequence
of named steps. Imports: the shared leaves, the compiled core and the Keras
bridge's seed; never `_distribution`, `_layouts` or `_cli`.
"""
