"""One machine's agent of a job across machines (`kdist launch --nodes`): join the nodes'
rendezvous, run this machine's processes of each attempt with `kdist._local_job`, report
how they ended, and leave with the job's status."""
