"""What keeps the job one unit after its start, for as long as it runs.

`opening` opens this process's end of the liveness channel (process 0's hub, or a
connection to it: a failure or a death named to every process at once; what the process
does when the job ends is the core's, liveness/liveness_channel.h); `leaving` is how
this process leaves the job (the exception hooks, the finish at exit, `os._exit`);
`stop` is the agreed stop (the stop-signal relay, `should_stop`, `request_stop`,
the stall watchdog's stacks) and a channel of this process alone outside a job;
`barrier` is `kdist.barrier`. `_start/` starts the channel and hands it here.
Imports: the shared leaves and the compiled core only.
"""
