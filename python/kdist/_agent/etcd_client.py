"""etcd's v3 API through its documented JSON gateway (etcd 3.4 to 3.6: `/v3/kv/range`,
`/v3/kv/txn`, `/v3/lease/grant`, `/v3/watch`, ...), over Python's own urllib: no gRPC, no
package to install. Keys and values travel base64-encoded, as the gateway wants them.

Every call is bounded (`call_timeout`); a call goes to one endpoint, and the next endpoint
of the list is tried when that one cannot answer, so a member down costs one try. TLS
endpoints (`https://`) and etcd's own users come from etcdctl's variables:
ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, ETCDCTL_USER ("name:password"; or
ETCDCTL_PASSWORD beside it). Nothing here retries beyond one pass over the endpoints: the
callers retry within their own windows (kdist._agent.etcd_rendezvous).
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# gRPC codes the gateway reports that mean "try again, maybe elsewhere": unavailable,
# deadline exceeded, and etcd's own "no leader" / "leader changed" (unknown, 2).
_TRANSIENT_CODES = {2, 4, 14}
_STREAM_LINE_LIMIT = 16 * 1024 * 1024  # one watch response (a book's state is far smaller)


class EtcdUnavailable(Exception):
    """No endpoint answered the call (each endpoint's reason in the message)."""


class EtcdRefused(Exception):
    """etcd answered and refused the call (permission, an unknown lease, a bad request)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class EtcdAccess:
    """How to reach etcd besides its address: TLS files and a user, from etcdctl's
    variables."""

    cacert: str | None = None
    cert: str | None = None
    key: str | None = None
    user: str | None = None
    password: str | None = None

    @staticmethod
    def from_environment(environ: Mapping[str, str]) -> EtcdAccess:
        """etcdctl's variables: ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, ETCDCTL_USER
        ("name:password", or "name" with ETCDCTL_PASSWORD).

        Example:
            >>> access = EtcdAccess.from_environment({"ETCDCTL_USER": "kdist:s3cret"})
            >>> (access.user, access.password)
            ('kdist', 's3cret')
        """
        user = environ.get("ETCDCTL_USER") or None
        password = environ.get("ETCDCTL_PASSWORD") or None
        if user is not None and ":" in user and password is None:
            user, password = user.split(":", 1)
        return EtcdAccess(
            cacert=environ.get("ETCDCTL_CACERT") or None,
            cert=environ.get("ETCDCTL_CERT") or None,
            key=environ.get("ETCDCTL_KEY") or None,
            user=user,
            password=password,
        )

    def context(self) -> ssl.SSLContext:
        """The TLS context of https:// endpoints: ETCDCTL_CACERT's authorities (else the
        system's), ETCDCTL_CERT and ETCDCTL_KEY as this client's certificate."""
        context = ssl.create_default_context(cafile=self.cacert)
        if self.cert is not None:
            context.load_cert_chain(self.cert, self.key)
        return context


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: bytes
    lease: int
    create_revision: int
    mod_revision: int


@dataclass(frozen=True)
class WatchEvent:
    kind: str  # "PUT" or "DELETE"
    key: str
    value: bytes
    lease: int
    revision: int


@dataclass(frozen=True)
class Watched:
    """What one watch stream brought: its events, and the revision to go on from."""

    events: list[WatchEvent] = field(default_factory=list)
    next_revision: int = 0
    compacted: bool = False


def _b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text) if text else b""


def prefix_end(prefix: str) -> str:
    """The end of a range holding every key that begins with `prefix` (etcd's own rule).

    Example:
        >>> prefix_end("kdist/job/")
        'kdist/job0'
    """
    raw = bytearray(prefix.encode())
    while raw and raw[-1] == 0xFF:
        raw.pop()
    raw[-1] += 1
    return raw.decode("latin-1")


def _key_value(kv: Mapping[str, Any]) -> KeyValue:
    return KeyValue(
        key=_unb64(kv.get("key", "")).decode(),
        value=_unb64(kv.get("value", "")),
        lease=int(kv.get("lease", 0)),
        create_revision=int(kv.get("create_revision", 0)),
        mod_revision=int(kv.get("mod_revision", 0)),
    )


class EtcdClient:
    """One etcd cluster, through its v3 JSON gateway; safe to use from several threads."""

    def __init__(
        self, endpoints: Sequence[str], access: EtcdAccess, call_timeout: float = 2.0
    ) -> None:
        if not endpoints:
            raise ValueError("EtcdClient: expected at least one endpoint, received none")
        self.endpoints = list(endpoints)
        self.call_timeout = call_timeout
        self._access = access
        self._context = (
            access.context() if any(e.startswith("https://") for e in endpoints) else None
        )
        self._lock = threading.Lock()
        self._current = 0  # the endpoint that answered last
        self._token: str | None = None  # etcd's auth token (users enabled)

    def describe(self) -> str:
        """The endpoints, as messages name them."""
        return ", ".join(self.endpoints)

    # -- one call ------------------------------------------------------------------
    def _open(
        self, endpoint: str, path: str, body: Mapping[str, Any], timeout: float
    ) -> Any:  # an http.client.HTTPResponse
        data = json.dumps(body).encode()
        request = urllib.request.Request(
            endpoint + path, data=data, headers={"Content-Type": "application/json"}
        )
        token = self._token
        if token is not None:
            request.add_header("Authorization", token)
        return urllib.request.urlopen(request, timeout=timeout, context=self._context)

    def _authenticate(self, endpoint: str, timeout: float) -> None:
        access = self._access
        if access.user is None:
            return
        body = {"name": access.user, "password": access.password or ""}
        self._token = None
        with self._open(endpoint, "/v3/auth/authenticate", body, timeout) as response:
            answer = json.loads(response.read())
        self._token = str(answer["token"])

    def call(self, path: str, body: Mapping[str, Any], timeout: float | None = None) -> Any:
        """POSTs `body` to `path` on the first endpoint that answers, starting with the one
        that answered last; its JSON answer. EtcdUnavailable when none did (each one's
        reason), EtcdRefused when one answered with a refusal."""
        bound = self.call_timeout if timeout is None else timeout
        reasons = []
        with self._lock:
            first = self._current
        count = len(self.endpoints)
        for i in range(count):
            index = (first + i) % count
            endpoint = self.endpoints[index]
            try:
                answer = self._call_one(endpoint, path, body, bound)
            except EtcdRefused:
                raise
            except Exception as error:
                reasons.append(f"{endpoint}: {_reason(error)}")
                continue
            with self._lock:
                self._current = index
            return answer
        with self._lock:
            self._current = (first + 1) % count  # the next call starts elsewhere
        raise EtcdUnavailable("; ".join(reasons))

    def _call_one(self, endpoint: str, path: str, body: Mapping[str, Any], timeout: float) -> Any:
        for attempt in (0, 1):
            if self._access.user is not None and self._token is None:
                self._authenticate(endpoint, timeout)
            try:
                with self._open(endpoint, path, body, timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                detail = _error_detail(error)
                code = int(detail.get("code", 0))
                message = str(detail.get("message") or detail.get("error") or error.reason)
                if "auth token" in message and attempt == 0:  # expired: authenticate again
                    self._token = None
                    continue
                if code in _TRANSIENT_CODES or (error.code >= 500 and code == 0):
                    raise OSError(f"{message} (HTTP {error.code})") from None
                raise EtcdRefused(message, code) from None
        raise OSError("authentication failed twice")

    # -- the API ------------------------------------------------------------------
    def range(self, key: str, prefix: bool = False) -> tuple[list[KeyValue], int]:
        """The keys at `key` (or under it, with `prefix`), and the store's revision."""
        body: dict[str, Any] = {"key": _b64(key)}
        if prefix:
            body["range_end"] = _b64(prefix_end(key))
        answer = self.call("/v3/kv/range", body)
        revision = int(answer.get("header", {}).get("revision", 0))
        return [_key_value(kv) for kv in answer.get("kvs", [])], revision

    def put(self, key: str, value: bytes | str, lease: int = 0) -> None:
        body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        self.call("/v3/kv/put", body)

    def delete(self, key: str, prefix: bool = False) -> None:
        body: dict[str, Any] = {"key": _b64(key)}
        if prefix:
            body["range_end"] = _b64(prefix_end(key))
        self.call("/v3/kv/deleterange", body)

    def txn(
        self,
        compare: Sequence[Mapping[str, Any]],
        success: Sequence[Mapping[str, Any]],
        failure: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[bool, list[Any]]:
        """One transaction: (whether every comparison held, the responses of the branch
        taken). Comparisons, puts and ranges are built with the helpers below."""
        answer = self.call(
            "/v3/kv/txn",
            {"compare": list(compare), "success": list(success), "failure": list(failure)},
        )
        return bool(answer.get("succeeded", False)), list(answer.get("responses", []))

    def grant(self, ttl: int) -> tuple[int, int]:
        """A new lease: (its id, its TTL as granted)."""
        answer = self.call("/v3/lease/grant", {"TTL": str(ttl)})
        return int(answer["ID"]), int(answer.get("TTL", ttl))

    def keepalive(self, lease: int) -> int:
        """Renews `lease`; its TTL from now, 0 when etcd no longer has it (expired)."""
        answer = self.call("/v3/lease/keepalive", {"ID": str(lease)})
        return int(answer.get("result", {}).get("TTL", 0))

    def revoke(self, lease: int) -> None:
        """Ends `lease` and deletes every key under it (an unknown lease is no error)."""
        try:
            self.call("/v3/lease/revoke", {"ID": str(lease)})
        except EtcdRefused as error:
            if "not found" not in str(error):
                raise

    def watch(self, key: str, prefix: bool, start_revision: int, duration: float) -> Watched:
        """The changes at `key` (or under it) from `start_revision` on, read for at most
        `duration` seconds from the endpoint that answered last (a stream that goes
        quiet is closed then, so a member that lost its cluster is not followed for
        long). EtcdUnavailable when the stream cannot be opened."""
        request: dict[str, Any] = {"key": _b64(key), "start_revision": str(start_revision)}
        if prefix:
            request["range_end"] = _b64(prefix_end(key))
        with self._lock:
            endpoint = self.endpoints[self._current]
        watched = Watched(next_revision=start_revision)
        try:
            if self._access.user is not None and self._token is None:
                self._authenticate(endpoint, self.call_timeout)
            response = self._open(endpoint, "/v3/watch", {"create_request": request}, duration)
        except Exception as error:
            with self._lock:
                self._current = (self._current + 1) % len(self.endpoints)
            if isinstance(error, urllib.error.HTTPError):
                self._token = None
            raise EtcdUnavailable(f"{endpoint}: {_reason(error)}") from None
        try:
            for result in _stream(response):
                if result.get("canceled"):
                    compact = int(result.get("compact_revision", 0))
                    return Watched(watched.events, max(compact, start_revision), compacted=True)
                for event in result.get("events", []):
                    kv = event.get("kv", {})
                    revision = int(kv.get("mod_revision", 0))
                    watched.events.append(
                        WatchEvent(
                            kind=str(event.get("type", "PUT")),
                            key=_unb64(kv.get("key", "")).decode(),
                            value=_unb64(kv.get("value", "")),
                            lease=int(kv.get("lease", 0)),
                            revision=revision,
                        )
                    )
                    watched = Watched(watched.events, revision + 1)
                if watched.events:
                    return watched  # the caller acts, then watches again from here
        except (TimeoutError, OSError, ValueError):
            pass  # quiet for `duration`, or the stream broke: watched again from here
        finally:
            response.close()
        return watched


def _stream(response: Any) -> Iterator[Mapping[str, Any]]:
    """The gateway's streamed answers, one JSON object a line ({"result": {...}})."""
    while True:
        line = response.readline(_STREAM_LINE_LIMIT)
        if not line:
            return
        line = line.strip()
        if not line:
            continue
        answer = json.loads(line)
        if "error" in answer:
            raise ValueError(str(answer["error"]))
        yield answer.get("result", {})


def _error_detail(error: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        detail = json.loads(error.read() or b"{}")
    except (ValueError, OSError):
        return {}
    return detail if isinstance(detail, dict) else {}


def _reason(error: BaseException) -> str:
    if isinstance(error, urllib.error.URLError) and not isinstance(error, urllib.error.HTTPError):
        error = error.reason if isinstance(error.reason, BaseException) else error
    if isinstance(error, (TimeoutError, socket.timeout)):
        return "no answer in time"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return str(error) or type(error).__name__


# -- the pieces of a transaction ----------------------------------------------------
def created_never(key: str) -> dict[str, Any]:
    """Compare: `key` does not exist."""
    return {"key": _b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}


def held_by(key: str, lease: int) -> dict[str, Any]:
    """Compare: `key` exists under `lease` (a deleted key, or another lease's, fails)."""
    return {"key": _b64(key), "target": "LEASE", "result": "EQUAL", "lease": str(lease)}


def put_request(key: str, value: bytes | str, lease: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
    if lease:
        body["lease"] = str(lease)
    return {"request_put": body}


def range_request(key: str, prefix: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"key": _b64(key)}
    if prefix:
        body["range_end"] = _b64(prefix_end(key))
    return {"request_range": body}


def delete_request(key: str, prefix: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"key": _b64(key)}
    if prefix:
        body["range_end"] = _b64(prefix_end(key))
    return {"request_delete_range": body}


def ranged(response: Mapping[str, Any]) -> list[KeyValue]:
    """The keys a transaction's range request found."""
    return [_key_value(kv) for kv in response.get("response_range", {}).get("kvs", [])]


def address_toward(endpoints: list[str]) -> str:
    """This machine's address on the way to etcd's first reachable endpoint: the one the
    other agents reach it on (they reach etcd the same way)."""
    for url in endpoints:
        host_and_port = url.split("://", 1)[-1]
        host, _, port = host_and_port.rpartition(":")
        host = host.strip("[]")
        try:
            infos = socket.getaddrinfo(host, int(port), proto=socket.IPPROTO_UDP)
        except (OSError, ValueError):
            continue
        for family, kind, proto, _name, where in infos:
            with contextlib.suppress(OSError), socket.socket(family, kind, proto) as probe:
                probe.connect(where)
                return str(probe.getsockname()[0])
    return "127.0.0.1"
