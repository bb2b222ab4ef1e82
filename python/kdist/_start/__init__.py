"""The start of a job: `initialize()` and what it runs, in order.

`config` resolves and validates every setting (through the compiled core);
`environment_fingerprint` and `accelerators` describe this process; `roll_call`
runs the roll call on the coordinator's port; `seed` agrees on the job seed;
`collectives` chooses the address JAX's CPU collectives advertise; `initialize`
is the sequence of named steps, which starts the liveness channel and hands it
to `_together/` (what keeps the job one unit after the start). Everything here
runs once. Imports: the shared leaves, the compiled core, `_together` and the
Keras bridge's seed; never `_distribution`, `_layouts` or `_cli`.
"""
