"""initialize(), shutdown(), is_initialized() and cluster_spec()."""

from __future__ import annotations

import logging
import sys
import threading
import time

from kdist import _core, _devices, _jax_backend, _state
from kdist._errors import ConfigError, InitializationOrderError
from kdist._start import collectives, config, roll_call, seed, tls
from kdist._together import leaving, opening, stop

_lock = threading.Lock()
_logger = logging.getLogger("kdist")
# How long each phase of the last successful initialize() took (see startup_timings()).
_last_timings: dict[str, float] = {}
# This process's TLS files for JAX's coordination service, which JAX re-reads while the job
# runs: closed by shutdown() (memory files also vanish with the process).
_credentials: tls.Credentials | None = None


def initialize(
    job_addresses: str | list[str] | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    timeout: float | None = None,
    cluster_detection: str | None = None,
    preflight: bool | None = None,
    heartbeat_timeout: int | None = None,
    shutdown_timeout: int | None = None,
    on_peer_failure: str | None = None,
    consistency: str | None = None,
    stop_signals: str | list[str] | None = None,
    stall_timeout: float | None = None,
    unreachable_timeout: float | None = None,
    tls: str | None = None,
) -> None:
    """Starts this process's part of a multi-process JAX job.

    Resolves every setting (argument, then environment variable, then a
    detected scheduler, then default), validates all of them before any side
    effect, then calls `jax.distributed.initialize` with every value explicit
    and JAX's own cluster auto-detection off. Call it before anything else
    touches JAX.

    Scheduler detection reads what the launcher or scheduler that started the
    process publishes, trying these detectors in this order: "torchrun"
    (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK), "ompi" (Open MPI's mpirun),
    "mpich" (MPICH / Intel MPI mpiexec), "skypilot" (SKYPILOT_NODE_IPS,
    SKYPILOT_NODE_RANK, SKYPILOT_NUM_NODES), "slurm" (tasks started by srun),
    "tf_config" (TF_CONFIG), "gke_tpu" (GKE TPU node pools:
    TPU_WORKER_HOSTNAMES, TPU_WORKER_ID, MEGASCALE_*), "gce_tpu" (Cloud TPU
    VMs: the GCE metadata server, as JAX reads it; asked under "auto" only
    where this machine has TPU chips or TPU variables are set) and
    "kubernetes" (Indexed Jobs). A detector only
    fills the cluster settings that neither an argument nor a
    KERAS_DISTRIBUTION_* variable gives; `cluster_spec().sources` names the
    detector and variable of each ("slurm (SLURM_PROCID)"). Where a scheduler
    does not publish a value (MPICH's coordinator, a Kubernetes Job's size),
    the error says what to set. Ports that a detector derives (Slurm, Open
    MPI 4, Kubernetes) or takes from MASTER_PORT are overridden by
    `KDIST_COORDINATOR_PORT` (or JAX's `JAX_COORDINATOR_PORT`); a Kubernetes
    Job's coordinator also needs `KDIST_K8S_SUBDOMAIN`, the pods' subdomain.

    Local devices are never restricted silently: by default each process
    uses every device it sees. `KDIST_LOCAL_DEVICE_IDS="auto"` applies the
    detected scheduler's suggestion (one device per process, by local rank;
    see `cluster_spec().suggested_local_device_ids` and
    `local_devices_reason`), "0,1" names the ids, "all" is the default.

    Args:
        job_addresses: The coordinator's "host:port", or every process's
            address separated by commas (the first is the coordinator; their
            count then gives `num_processes`). IPv6 hosts go in brackets:
            "[fe80::1]:1234". Defaults to None: `KERAS_DISTRIBUTION_JOB_ADDRESSES`.
        num_processes: Number of processes in the job. Defaults to None:
            `KERAS_DISTRIBUTION_NUM_PROCESSES`, else the number of addresses.
            `num_processes=1` runs a single process without a coordinator.
        process_id: This process's id in `[0, num_processes)`; 0 is the
            coordinator. Defaults to None: `KERAS_DISTRIBUTION_PROCESS_ID`
            (0 when there is one process).
        timeout: Seconds to wait for the whole job to start. Defaults to None:
            `KDIST_INIT_TIMEOUT`, else 300 (JAX's own default).
        cluster_detection: "auto" (the first detector, in the order above,
            whose variables are present), "none" (no detection), or one
            detector's name ("torchrun", "ompi", "mpich", "skypilot", "slurm",
            "tf_config", "gke_tpu", "gce_tpu", "kubernetes"). Defaults to None:
            `KDIST_CLUSTER_DETECTION`, else "auto".
        preflight: Whether to run the roll call before JAX starts:
            process 0 binds the coordinator port and collects a hello from
            every process, which fails fast and names what is wrong (a
            taken port, an unreachable coordinator, duplicate or missing
            process ids, processes that disagree on the settings) and lets
            every process connect to JAX's service at its first try. Turn
            it off only for jobs that mix kdist and plain JAX processes.
            Set `KDIST_ROLL_CALL_TOKEN` (formerly `KDIST_RENDEZVOUS_TOKEN`) to
            the same secret in every process to keep processes of other jobs
            out of the roll call. Defaults
            to None: `KDIST_ROLL_CALL` (formerly `KDIST_PREFLIGHT`), else True.
        heartbeat_timeout: Whole seconds after which JAX declares a silent
            process dead (JAX's `heartbeat_timeout_seconds`). Every process
            must use the same value (the roll call checks it). Defaults to
            None: `KDIST_HEARTBEAT_TIMEOUT`, else JAX's default (100); JAX
            receives it only when set.
        shutdown_timeout: Whole seconds JAX's shutdown barrier waits for
            every process (JAX's `shutdown_timeout_seconds`); also how long
            process 0 waits at its end for the others to finish. Every
            process must use the same value. Defaults to None:
            `KDIST_SHUTDOWN_TIMEOUT`, else JAX's default (300).
        on_peer_failure: What this process does when another process of the
            job fails (an uncaught exception) or dies (killed, crashed):
            "exit" prints one line naming the first failure and leaves with
            status 1, at once, even while waiting in a collective; "ignore"
            prints the line and goes on, for programs that handle failures
            themselves. Needs the roll call (preflight), which announces the
            liveness channel. Defaults to None: `KDIST_ON_PEER_FAILURE`, else
            "exit".
        consistency: What the roll call does when the processes' environments
            differ (each sends its fingerprint: jax, jaxlib, keras, kdist and
            Python versions, device platform and count, OS, `XLA_FLAGS`, other
            `JAX_*` settings, the script's and its arguments' hashes; see
            `kdist doctor`). "warn" stops the job, in every process, on a
            difference that would crash or corrupt it (jax, jaxlib, device
            platform or count) and warns about the rest in every process;
            "strict" stops it on any difference; "off" compares nothing. Every
            process must use the same value. Defaults to None:
            `KDIST_CONSISTENCY`, else "warn".
        stop_signals: The signals that ask the whole job to stop: a comma list
            of names ("SIGTERM,SIGUSR1") or a list of them; "none" turns this
            off. kdist installs its handler after JAX's, chaining to the
            handlers that were there (XLA's preemption notifier, the program's
            own). Programs that call `kdist.should_stop(step)` every step see it
            turn True at one agreed step in every process; in programs that do
            not, a stop signal ends every process at once with status 128 + the
            signal's number. Every process must use the same value. Defaults to
            None: `KDIST_STOP_SIGNALS`, else "SIGTERM".
        stall_timeout: Seconds after which a process that reported progress
            (`should_stop`, `barrier`) and then none ends the whole job, named
            with its last step and its Python stacks (every thread, on its
            stderr). Every process must use the same value. Defaults to None:
            `KDIST_STALL_TIMEOUT`, else off.
        unreachable_timeout: Seconds a process's host may answer nothing
            (no FIN, no RST: it lost power or its network, or a firewall drops
            its traffic) before the liveness channel ends the job, every
            process naming the unreachable process, its host and since when
            (the process cut off names the coordinator it lost). TCP
            keepalive and TCP_USER_TIMEOUT are sized from it: a first probe
            after a quarter of it, then one every tenth, so a blackout much
            shorter (3 s against the default 20 s) heals without notice. A
            shorter value ends a lost host's job sooner but mistakes a longer
            network hiccup for a loss; a longer one rides out hiccups and
            leaves the others waiting longer. At least 1 and below
            `heartbeat_timeout`, which would end the job first by SIGABRT.
            Every process must use the same value. Defaults to None:
            `KDIST_UNREACHABLE_TIMEOUT`, else 20 (half of `heartbeat_timeout`
            when that is 20 or less).
        tls: Whether JAX's coordination service (process 0's port after the roll
            call: the job's key-value store, barriers, heartbeats, shutdown) runs
            under mutual TLS with certificates kdist makes from the job's token
            (`KDIST_ROLL_CALL_TOKEN`): no file is copied between machines, each
            process makes its own key in memory, and a process of another job or
            attempt cannot connect. "auto" turns it on where the job has a token,
            JAX is 0.12 or later and the `cryptography` package is installed
            (`pip install 'kdist[tls]'`), and says in one line why it is off where
            that matters; "required" refuses to start without it, before anything
            starts; "off" never makes certificates. The user's own jax_mtls_*
            settings (JAX_MTLS_CERT_FILE, ..., or jax.config) win over kdist's and
            are checked before the start (readable, key matching certificate,
            valid now, chain verifying). `cluster_spec().tls_state` says what the
            start did. Every process must use the same value (the roll call
            compares what each made of it). Defaults to None: `KDIST_TLS`, else
            "auto".

    Raises:
        TypeError: an argument has the wrong type (a float or bool where an
            int is expected).
        kdist.ConfigError: a value is malformed, out of range, missing or
            inconsistent; a detected scheduler's variables are partial or
            malformed (an ssh session inside a Slurm allocation) while a value
            is needed from them; `cluster_detection` names an unknown or
            absent detector; or kdist is already initialized with other
            values. The message names the value and where it came from.
        ModuleNotFoundError: the job has a coordinator but JAX is not
            installed in this Python; raised before the roll call (the
            message names the process and the interpreter).
        kdist.InitializationOrderError: the JAX backend is already running
            (something called `jax.devices()`, `list_devices()`, or ran a
            computation first), or `jax.distributed` was initialized directly.
        kdist.PortInUseError: process 0 found the coordinator port taken by
            another live listener (the message names its pid where possible).
        kdist.CoordinatorUnreachableError: another process could not reach
            the coordinator before the deadline.
        kdist.RendezvousError: the processes disagree (duplicate or
            out-of-range ids, num_processes, coordinator address,
            configuration, KDIST_ROLL_CALL_TOKEN) or cannot work together
            (their environments differ; see `consistency`); raised in every
            process, with one table naming the values, process ids and hosts.
        kdist.RendezvousTimeoutError: not every process joined before the
            deadline; process 0 names the missing ids.

    Example:
        >>> import kdist
        >>> kdist.initialize(num_processes=1)
        >>> kdist.is_initialized()
        True
        >>> kdist.shutdown()
    """
    arrived = time.time()
    spec = config.resolve(
        job_addresses,
        num_processes,
        process_id,
        timeout=timeout,
        cluster_detection=cluster_detection,
        preflight=preflight,
        heartbeat_timeout=heartbeat_timeout,
        shutdown_timeout=shutdown_timeout,
        on_peer_failure=on_peer_failure,
        consistency=consistency,
        stop_signals=stop_signals,
        stall_timeout=stall_timeout,
        unreachable_timeout=unreachable_timeout,
        tls=tls,
    )
    with _lock:
        if _already_joined(spec):
            return
        start = _Start(spec, arrived)
        if spec.coordinator_address is not None:
            _join_job(start, spec.coordinator_address)
        if start.channel is None:
            # A job of one process, or one without the roll call (no liveness channel):
            # this process answers for its own stop signals, stalls and barriers.
            start.channel = stop.start_lone_channel(start.spec, start.board)
            start.lone = True
        stop.activate(start.spec, start.board, start.channel, lone=start.lone)
        seed_in_force, seed_source = seed.apply(
            start.shared.seed, start.seed_source, spec.process_id
        )
        start.timings["total_s"] = time.time() - arrived
        _devices.invalidate_device_cache()
        joined = start.spec.with_seed(seed_in_force, seed_source)
        if start.tls is not None:
            joined = joined.with_tls_state(start.tls.describe())
        _keep_credentials(start.credentials)
        _state.set_active_spec(joined)
        _last_timings.clear()
        _last_timings.update(start.timings)


class _Start:
    """What initialize()'s steps hand each other: the spec (which gains what the roll
    call compared), what the job shares, where the seed came from, the liveness channel
    being opened, and the timings."""

    def __init__(self, spec: _core.ClusterSpec, arrived: float) -> None:
        self.spec = spec
        self.timings: dict[str, float] = {"arrived": arrived}
        # The job seed: chosen by process 0 (or this single process), shared by the roll
        # call's "go" or, without it, by JAX's key-value store.
        self.shared = _core.JobShared()
        self.shared.seed = seed.choose() if spec.process_id == 0 else 0
        self.seed_source = "drawn by this process"
        self.roll_call = spec.preflight and spec.num_processes > 1
        # This process's board (should_stop, barriers, stop signals), made before JAX's
        # initialize replaces the program's signal handlers, and the channel it reports to.
        self.board = stop.prepare(spec)
        self.channel: _core.LivenessChannel | None = None
        self.lone = False
        # The bound of the whole start, from now: every wait below takes it.
        self.deadline = _core.Deadline(spec.timeout)
        # Process 0's hub, or another process's join under way (None without the roll call).
        self.hub: _core.LivenessChannel | None = None
        self.joining: opening.BackgroundJoin | None = None
        # The coordinator as this process reached it: after the roll call, the IP literal
        # that answered (the others: the configured address).
        self.reached_coordinator_at: str | None = None
        # TLS for JAX's service: the plan (decided before any side effect), its making
        # (beside the roll call) and what was made.
        self.tls: tls.Plan | None = None
        self.tls_making: tls.BackgroundMake | None = None
        self.credentials: tls.Credentials | None = None


def _already_joined(spec: _core.ClusterSpec) -> bool:
    """True when this process already joined this very job; raises for another one."""
    active = _state.active_spec()
    if active is None:
        return False
    if active.same_job_and_process(spec):
        return True
    raise ConfigError(
        f"kdist is already initialized as {active!r}, and this call resolved "
        f"to {spec!r}. A process joins one job once; call kdist.shutdown() before "
        "initializing with other values."
    )


def _join_job(start: _Start, coordinator: str) -> None:
    """A job with a coordinator: the roll call, then JAX's start with the liveness join
    beside it; on any failure, the abort path. Then, without the roll call, the seed
    travels through JAX's key-value store."""
    spec = start.spec
    # Before any side effect: a process without JAX must not join the roll call (it
    # would say hello, then fail after "go" while the others wait).
    _check_jax_installed(spec)
    _check_jax_not_started()
    # Also before any side effect: KDIST_TLS=required that cannot be met, or the user's
    # own certificates that JAX could not use, stop the start here.
    start.tls = tls.decide(spec)
    start.tls_making = tls.BackgroundMake(start.tls, spec)
    if start.roll_call and spec.process_id == 0:
        # Before the roll call: "go" announces the hub's port and nonce.
        start.hub = opening.start_hub(spec, start.shared, start.board)
    try:
        if start.roll_call:
            _run_roll_call(start)
        _start_jax(start, coordinator)
        _install_liveness(start)
    except BaseException as error:
        _abort_start(start, error)
        raise
    if not start.roll_call and spec.num_processes > 1:
        start.shared.seed = _share_seed_by_key_value_store(spec, start.shared.seed, start.deadline)
        start.seed_source = "key-value store: process 0's seed"
    _log_initialized(spec, start.deadline.elapsed())


def _run_roll_call(start: _Start) -> None:
    """The roll call, with JAX imported on a helper thread while it waits (from the
    moment process 0 holds its port). After "go", a process other than 0 starts joining
    the liveness channel and waits until process 0's JAX service accepts connections,
    so that JAX's client does not sleep in its 1 s retry."""
    jax_import = _jax_backend.BackgroundImport()
    tls_making = start.tls_making
    assert start.tls is not None and tls_making is not None

    def on_waiting() -> None:
        jax_import.start()
        tls_making.start()  # this process's certificate, while the others arrive

    try:
        outcome = roll_call.roll_call(
            start.spec,
            start.deadline,
            start.shared,
            on_waiting=on_waiting,
            tls=start.tls.fingerprint_value(),
        )
        roll_call_ended = time.monotonic()
        start.timings["roll_call_s"] = start.deadline.elapsed()
    finally:
        jax_import.join()
    jax_import.raise_error()
    start.timings["jax_import_wait_s"] = time.monotonic() - roll_call_ended
    start.shared = outcome.shared
    start.seed_source = "roll call: process 0's seed"
    start.spec = start.spec.with_consistency(
        list(outcome.compared), outcome.shared.consistency_notes
    )
    if outcome.worker is None:
        return  # process 0: its hub is already up, and it starts JAX's service itself
    start.reached_coordinator_at = outcome.worker.connected_to
    # Joined on a helper thread while JAX starts (the join waits on the network with the
    # GIL released): the channel watches this process from the start of JAX's
    # initialize, at no cost to the start's time.
    start.joining = opening.BackgroundJoin(start.spec, outcome.worker, board=start.board)
    waited_from = time.monotonic()
    roll_call.wait_for_coordinator_service(start.spec, outcome.worker, start.deadline)
    start.timings["service_wait_s"] = time.monotonic() - waited_from


def _start_jax(start: _Start, coordinator: str) -> None:
    """`jax.distributed.initialize` with every value explicit, in the time left."""
    spec = start.spec
    jax_started = time.monotonic()
    # Before JAX starts: where the CPU collectives listen (a JAX that cannot be told,
    # on a host whose name is loopback, stops here in every process).
    advertised = collectives.choose(
        spec, start.reached_coordinator_at or coordinator, start.deadline.remaining()
    )
    if advertised is not None:
        collectives.refuse_if_unreachable(advertised)
    mtls = _tls_keywords(start)
    _jax_backend.initialize_distributed(
        coordinator,
        spec.num_processes,
        spec.process_id,
        start.deadline.remaining(),
        spec.local_device_ids,
        lifetime_timeouts=_lifetime_timeouts(spec),
        coordinator_bind_address=spec.coordinator_bind_address,
        mtls=mtls,
    )
    if advertised is not None and _jax_backend.advertise_cpu_collectives(
        advertised.hostname, advertised.interface
    ):
        _logger.info("JAX's CPU collectives advertise %s", advertised.describe())
    start.timings["jax_initialize_s"] = time.monotonic() - jax_started


def _tls_keywords(start: _Start) -> dict[str, object] | None:
    """JAX's mutual TLS keywords for this process (its certificate made beside the roll
    call, or now without one), or None without TLS."""
    if start.tls_making is None or start.tls is None:
        return None
    waited_from = time.monotonic()
    start.credentials = start.tls_making.result()
    if start.credentials is None:
        return None
    start.timings["tls_s"] = time.monotonic() - waited_from
    _logger.info("JAX's coordination service runs under mutual TLS: %s", start.tls.why)
    return start.credentials.keywords


def _keep_credentials(credentials: tls.Credentials | None) -> None:
    """Keeps this process's TLS files for as long as JAX's service may read them."""
    global _credentials
    if _credentials is not None and _credentials is not credentials:
        _credentials.close()
    _credentials = credentials


def _install_liveness(start: _Start) -> None:
    """Hooks this process's exits to the liveness channel, once the join that ran
    beside JAX's initialize is done (process 0: its hub)."""
    waited_from = time.monotonic()
    channel = start.hub if start.joining is None else start.joining.result()
    if channel is not None:
        leaving.install(channel, start.spec)
        start.channel = channel
        start.timings["liveness_s"] = time.monotonic() - waited_from


def _abort_start(start: _Start, error: BaseException) -> None:
    """The start failed: tells the processes already watched (they would otherwise wait
    in JAX's barrier), and leaves no thread or listener."""
    joined = start.joining.result() if start.joining is not None else None
    for opened in (start.hub, joined):
        if opened is not None:
            opened.report_failure(f"kdist.initialize() failed: {leaving.describe(error)}")
            opened.stop()
    # No thread left making certificates, no TLS file left open (JAX never started, or
    # failed to: nothing reads them).
    if start.tls_making is not None:
        start.tls_making.discard()
    if start.credentials is not None:
        start.credentials.close()


def _lifetime_timeouts(spec: _core.ClusterSpec) -> dict[str, int]:
    """JAX's heartbeat and shutdown timeouts, for the keywords that were set (JAX's own
    defaults otherwise, so a JAX without the keywords still works when they are not)."""
    out: dict[str, int] = {}
    if spec.sources["heartbeat_timeout"] != "default":
        out["heartbeat_timeout_seconds"] = spec.heartbeat_timeout
    if spec.sources["shutdown_timeout"] != "default":
        out["shutdown_timeout_seconds"] = spec.shutdown_timeout
    return out


def _share_seed_by_key_value_store(
    spec: _core.ClusterSpec, job_seed: int, deadline: _core.Deadline
) -> int:
    """Without the roll call: process 0 publishes the job seed in JAX's key-value store,
    the others read it (one key, one round trip)."""
    if spec.process_id == 0:
        _jax_backend.key_value_set(seed.KEY_VALUE_STORE_KEY, str(job_seed))
        return job_seed
    text = _jax_backend.key_value_get(seed.KEY_VALUE_STORE_KEY, max(1.0, deadline.remaining()))
    return int(text)


def startup_timings() -> dict[str, float]:
    """How long the phases of the last successful `initialize()` took.

    Keys: "arrived" (time.time() when initialize() was called) and "total_s",
    always; "roll_call_s" (the roll call, including the wait for the other
    processes) and "jax_import_wait_s" (importing JAX beyond what overlapped the
    roll call) only when the roll call ran (preflight on, more than one process);
    "service_wait_s" (processes other than 0, after "go": waiting until process
    0's JAX service accepts connections) only with the roll call;
    "jax_initialize_s" (jax.distributed.initialize itself, including importing
    JAX when no roll call ran) only with a coordinator; "liveness_s" (waiting,
    after JAX started, for the liveness join that ran beside it; about 0 in
    process 0) only when the channel was set up; "tls_s" (waiting for this
    process's TLS certificate, made beside the roll call) only under TLS.
    Phases that did not run are absent; empty before the first initialize().
    """
    return dict(_last_timings)


def _check_jax_installed(spec: _core.ClusterSpec) -> None:
    if _jax_backend.jax_installed():
        return
    raise ModuleNotFoundError(
        f"kdist.initialize() in process {spec.process_id} of {spec.num_processes} needs JAX "
        f"to join the job at {spec.coordinator_address}, but this Python ({sys.executable}) "
        "cannot import 'jax': no module named 'jax' was found. Install jax into this "
        f"environment ({sys.executable} -m pip install jax, or jax[cuda12] for NVIDIA "
        "GPUs) on every host of the job, then start the job again. kdist stopped before "
        "the roll call, so the other processes will report this process as "
        "missing.",
        name="jax",
    )


def _check_jax_not_started() -> None:
    if _jax_backend.distributed_started():
        raise InitializationOrderError(
            "jax.distributed is already initialized in this process (it was called "
            "directly, not through kdist). Call kdist.initialize() instead of "
            "jax.distributed.initialize(), not after it."
        )
    if _jax_backend.backend_started():
        raise InitializationOrderError(
            "kdist.initialize() must run before the JAX backend starts, but it has already "
            "started: something called jax.devices(), kdist.list_devices(), "
            "kdist.get_device_count(), created an array or ran a computation first. Move "
            "kdist.initialize() to the start of the program, before any of those."
        )


def _log_initialized(spec: _core.ClusterSpec, seconds: float) -> None:
    _logger.info(
        "process %d of %d joined the job at %s in %.3f s",
        spec.process_id,
        spec.num_processes,
        spec.coordinator_address,
        seconds,
    )


def shutdown() -> None:
    """Leaves the job: shuts `jax.distributed` down and forgets the spec.

    Does nothing when kdist is not initialized. Device lists are computed
    afresh afterwards.

    Example:
        >>> import kdist
        >>> kdist.initialize(num_processes=1)
        >>> kdist.shutdown()
        >>> kdist.is_initialized()
        False
    """
    with _lock:
        active = _state.active_spec()
        if active is None:
            return
        barrier = leaving.finish(barrier=True)
        channel = leaving.uninstall()
        if active.coordinator_address is not None:
            if barrier:
                _jax_backend.shutdown_distributed()
            else:
                _logger.warning(
                    "a process left the job with os._exit() without JAX's shutdown barrier; "
                    "skipping the barrier (it could never complete)"
                )
        stop.deactivate()
        if channel is not None:
            channel.stop()
        _keep_credentials(None)  # JAX's service is down: nothing reads them any more
        _state.set_active_spec(None)
        _devices.invalidate_device_cache()


def is_initialized() -> bool:
    """Returns whether `initialize()` has succeeded and `shutdown()` not run since.

    Example:
        >>> import kdist
        >>> kdist.is_initialized()
        False
    """
    return _state.active_spec() is not None


def cluster_spec() -> _core.ClusterSpec | None:
    """Returns the resolved configuration of this process, or None before `initialize()`.

    Each value remembers where it came from: `cluster_spec().sources` maps
    "job_addresses", "num_processes", "process_id", "timeout", "preflight",
    "cluster_detection", "local_device_ids", "coordinator_bind_address",
    "heartbeat_timeout", "shutdown_timeout", "unreachable_timeout", "on_peer_failure",
    "consistency", "stop_signals", "stall_timeout", "tls" and "restart_count" (and, after
    initialize(), "seed"; in a process of `kdist launch --nodes`, "node_rank", "num_nodes",
    "local_process_id" and "job_id") to "argument", an environment variable's name (JAX's own
    JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID, JAX_LOCAL_DEVICE_IDS
    and JAX_COORDINATOR_BIND_ADDRESS are read after kdist's), a detector with its
    variables ("slurm (SLURM_PROCID)"), "job_addresses" (counted from the list) or
    "default".
    "mtls_cert_file", "mtls_key_file", "mtls_ca_file" and "mtls_peer_uri_prefix" appear
    when JAX's variables set them (JAX_MTLS_CERT_FILE, ...). After initialize(),
    `tls_state` says what the start did about TLS for JAX's coordination service ("on:
    kdist's certificates for attempt 0 of job "t57"", "off: the job has no token
    (KDIST_ROLL_CALL_TOKEN)"; "" without a coordinator).
    `cluster_spec().scheduler` names the detected scheduler (or is None);
    `local_device_ids` are the device ids handed to JAX (None: all),
    `suggested_local_device_ids` and `local_devices_reason` what the scheduler
    suggests and why, `local_devices_suggestion_applied` whether the ids are
    that suggestion. `restart_count` is how many times the job was started again
    (KDIST_RESTART_COUNT, else SLURM_RESTART_COUNT or TORCHELASTIC_RESTART_COUNT,
    else 0). `node_rank`, `num_nodes`, `local_process_id` and `job_id` say where this
    process sits when `kdist launch --nodes` started it (KDIST_NODE_RANK, KDIST_NUM_NODES,
    KDIST_LOCAL_PROCESS_ID, KDIST_JOB_ID; None or "" otherwise). After the roll call,
    `compared_environment` is this process's environment fingerprint as the processes
    compared it, and `consistency_notes` the differences let pass.

    Example:
        >>> import kdist
        >>> kdist.initialize(num_processes=1)
        >>> kdist.cluster_spec().sources["process_id"]
        'default'
        >>> kdist.shutdown()
    """
    return _state.active_spec()
