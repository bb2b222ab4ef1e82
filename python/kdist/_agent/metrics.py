"""/metrics for Prometheus (`--metrics-port PORT` on `kdist launch`, both modes, and on
`kdist rendezvous serve`): the job's state as `kdist status` reads it (JSON schema 1: the
rendezvous's book, or `kdist launch -n`'s own ledger), turned into metrics at each scrape
by Prometheus's own client library (`prometheus_client`, the `metrics` extra, imported
only here and only when the flag is given).

Each metric carries the labels `job_id` and `node` (the agent's node name; the host's name
for `kdist launch -n` and `kdist rendezvous serve`):

    kdist_attempt                    gauge    the job's current attempt, from 0
    kdist_nodes                      gauge    the nodes in the job now (not lost)
    kdist_processes                  gauge    the processes of the running attempt
    kdist_step                       gauge    the newest step the processes reported
    kdist_restarts_total{cause}      counter  restarts by cause: failure, node_lost,
                                              drained, grown, stopped
    kdist_seconds_total{phase}       counter  the job's wall time by phase: productive,
                                              starting, restarting, recomputing, waiting
    kdist_goodput_ratio              gauge    productive / wall time
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kdist import _errors

CAUSES = ("failure", "node_lost", "drained", "grown", "stopped")
PHASES = ("productive", "starting", "restarting", "recomputing", "waiting")
STATUS_SECONDS = 1.0  # a status read is reused this long (every agent may be scraped)

StatusSource = Callable[[], dict[str, Any] | None]


class MetricsServer:
    """The /metrics endpoint of one process; `close()` ends it."""

    def __init__(self, server: Any, thread: threading.Thread, where: str) -> None:
        self._server = server
        self._thread = thread
        self.where = where

    def close(self) -> None:
        """Stops serving and frees the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)


def serve_metrics(port: int, status: StatusSource, node: str, host: str = "") -> MetricsServer:
    """Serves /metrics on `host`:`port` from `status` (read at most once a second).

    Args:
        port: --metrics-port.
        status: The job's state, JSON schema 1 as a dict (None while it cannot be read:
            then only the metrics' HELP and TYPE lines are served).
        node: The `node` label.
        host: The address to bind: where the agent listens (its address toward the
            rendezvous), the rendezvous's own; "": every address (`kdist launch -n`).

    Returns:
        The running server.

    Raises:
        PortInUseError: the port is taken (named, before the job starts).
        ConfigError: prometheus_client is not installed.

    Example:
        >>> server = serve_metrics(9400, lambda: None, "node-a")  # doctest: +SKIP
        >>> server.close()  # doctest: +SKIP
    """
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError as error:
        raise _errors.ConfigError(
            f"--metrics-port {port} needs prometheus_client, which is not installed "
            f"({error}); install it: pip install 'kdist[metrics]'"
        ) from None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(_Cached(status), node))
    from kdist._local_job.environment import host_port

    where = host_port(host or "0.0.0.0", port)
    try:
        server, thread = start_http_server(port, addr=host or "0.0.0.0", registry=registry)
    except OSError as error:
        raise _errors.PortInUseError(
            f"--metrics-port {port}: cannot serve /metrics on {where} ({error.strerror or error}"
            "); another program holds the port: choose a free one"
        ) from None
    return MetricsServer(server, thread, where)


class _Cached:
    """The status source, read at most once every STATUS_SECONDS."""

    def __init__(self, source: StatusSource) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._at = -STATUS_SECONDS
        self._value: dict[str, Any] | None = None

    def __call__(self) -> dict[str, Any] | None:
        with self._lock:
            now = time.monotonic()
            if now - self._at >= STATUS_SECONDS:
                try:
                    self._value = self._source()
                except (_errors.KdistError, OSError, ValueError):
                    self._value = None  # the rendezvous unreachable: no values this scrape
                self._at = now
            return self._value


class _Collector:
    """The job's state as metrics, made at each scrape."""

    def __init__(self, status: StatusSource, node: str) -> None:
        self._status = status
        self._node = node

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        status = self._status() or {}
        labels = ["job_id", "node"]
        values = [str(status.get("job_id") or ""), self._node]

        def gauge(name: str, doc: str, value: object) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, doc, labels=labels)
            if isinstance(value, int | float) and not isinstance(value, bool):
                family.add_metric(values, float(value))
            return family

        nodes = [n for n in status.get("nodes", []) if not n.get("lost") and not n.get("joining")]
        known = bool(status)
        yield gauge("kdist_attempt", "The job's current attempt, from 0.", status.get("attempt"))
        yield gauge(
            "kdist_nodes", "The nodes in the job now (not lost).", len(nodes) if known else None
        )
        yield gauge(
            "kdist_processes", "The processes of the running attempt.", status.get("processes")
        )
        yield gauge("kdist_step", "The newest step the processes reported.", status.get("step"))
        restarts = CounterMetricFamily(
            "kdist_restarts", "The job's restarts by cause.", labels=[*labels, "cause"]
        )
        seconds = CounterMetricFamily(
            "kdist_seconds",
            "The job's wall time by phase (goodput by cause).",
            labels=[*labels, "phase"],
        )
        goodput = status.get("goodput") or {}
        if known:
            counts = status.get("restarts") or {}
            for cause in sorted({*CAUSES, *counts}):
                restarts.add_metric([*values, cause], float(counts.get(cause, 0)))
            for phase in PHASES:
                seconds.add_metric([*values, phase], float(goodput.get(f"{phase}_seconds", 0.0)))
        yield restarts
        yield seconds
        yield gauge("kdist_goodput_ratio", "Productive time / wall time.", goodput.get("ratio"))


def status_of_json(read: Callable[[], str]) -> StatusSource:
    """A status source over a function that returns the status as JSON text."""
    return lambda: json.loads(read())
