"""An N-process job on this machine: what `kdist launch` and `kdist.testing.run_job` share.

`environment` gives each process its KERAS_DISTRIBUTION_* variables (the coordinator on
127.0.0.1); `process` is one started process: its own process group, its death with
its parent (PR_SET_PDEATHSIG), its exit watched without reaping it; `output` copies
each process's lines to one place with an `[id] ` prefix; `job` starts every process
and ends them together, naming the first failure; `attempt` is one start of the whole job
watched to one typed end (passed, failed, stopped, timed out, port taken, cannot start),
the one loop both starters run; `warm` keeps a spare interpreter per local process that has
imported the heavy modules and runs the next attempt's program (`spare` is its program);
`compile_cache` gives every attempt one JAX compilation cache. Imports: the shared leaves
only.
"""
