"""TLS for JAX's coordination service: decided before the start, made beside the roll call.

JAX's coordination service (process 0's port after the roll call: the job's key-value
store, barriers, heartbeats and shutdown) is neither encrypted nor authenticated unless
JAX 0.12's mutual TLS is given a certificate, a key and a CA for every process. kdist makes
them from the job's token, so that no file is copied between machines:

- `decide(spec)` runs before any side effect and says what the start will do, in every
  process alike: the user's own `jax_mtls_*` settings (they win; checked here: files
  readable, key matches certificate, valid now, chain verifies), kdist's certificates (a
  token, JAX 0.12, `cryptography` installed, `KDIST_TLS` not off), or none, and why. Under
  `KDIST_TLS=required` a start that cannot have TLS is refused here, named.
- `make(plan, files)` makes this process's key and certificate, signed by the job's
  authority, whose key every process derives from the token in the core
  (`_core.tls_binding`); the files live in memory (`secret_files`).
- the roll call compares each process's plan (`fingerprint_value`): processes that would
  not understand each other's TLS are stopped there, named, not after JAX's timeout.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from dataclasses import dataclass, field

from kdist import _core, _jax_backend
from kdist._errors import ConfigError
from kdist._start.secret_files import SecretFiles

_logger = logging.getLogger("kdist")

# What the plans are.
KDIST = "kdist"  # kdist's certificates, made from the job's token
USER = "user"  # the user's own jax_mtls_* settings
OFF = "off"

# JAX's option, the ClusterSpec field holding its variable, and JAX's keyword.
_USER_SETTINGS = (
    ("jax_mtls_cert_file", "mtls_cert_file"),
    ("jax_mtls_key_file", "mtls_key_file"),
    ("jax_mtls_ca_file", "mtls_ca_file"),
    ("jax_mtls_peer_uri_prefix", "mtls_peer_uri_prefix"),
)
_FILES = ("mtls_cert_file", "mtls_key_file", "mtls_ca_file")
_INSTALL = "pip install 'kdist[tls]' (or the cryptography package) on every host"


@dataclass(frozen=True)
class UserSetting:
    """One of JAX's mTLS settings as the user gave it.

    Attributes:
        keyword: JAX's keyword ("mtls_cert_file").
        value: The path (or the peer URI prefix).
        source: Where it came from: JAX's variable ("JAX_MTLS_CERT_FILE") or "jax.config".
    """

    keyword: str
    value: str
    source: str

    def describe(self) -> str:
        """How messages name it: `JAX_MTLS_CERT_FILE="/p" (from the environment)` or
        `jax_mtls_cert_file="/p" (set with jax.config)`."""
        if self.source == "jax.config":
            return f'jax_{self.keyword}="{self.value}" (set with jax.config)'
        return f'{self.source}="{self.value}" (from the environment)'


@dataclass(frozen=True)
class Plan:
    """What this process's start does about TLS.

    Attributes:
        mode: KDIST (kdist's certificates), USER (the user's jax_mtls_* settings) or OFF.
        why: In words: why it is off, or what it uses.
        user: The user's settings (mode USER).
        binding: What kdist's certificates derive from (mode KDIST).
    """

    mode: str
    why: str
    user: tuple[UserSetting, ...] = ()
    binding: _core.TlsBinding | None = field(default=None, compare=False)

    @property
    def on(self) -> bool:
        return self.mode != OFF

    def describe(self) -> str:
        """The state in one line: "on: kdist's certificates for attempt 0 of job "t57"",
        "off: the job has no token (KDIST_ROLL_CALL_TOKEN)"."""
        return f"{'on' if self.on else 'off'}: {self.why}"

    def fingerprint_value(self) -> str:
        """What the roll call compares (every process's must be equal: a process under
        TLS and one without, or under another authority, cannot reach each other)."""
        if self.mode == USER:
            return "on: the user's jax_mtls_* settings"
        return self.describe()


@dataclass
class Credentials:
    """This process's mutual TLS settings for `jax.distributed.initialize`, and the files
    they name (removed by `close`)."""

    keywords: dict[str, object]
    files: SecretFiles | None = None

    def close(self) -> None:
        if self.files is not None:
            self.files.close()


def cryptography_installed() -> bool:
    """Whether `cryptography` (kdist's `tls` extra) is installed, found without importing it."""
    try:
        return importlib.util.find_spec("cryptography") is not None
    except (ImportError, ValueError):
        return False


def user_settings(spec: _core.ClusterSpec) -> tuple[UserSetting, ...]:
    """The user's own mTLS settings: JAX's variables (resolved with the spec), overridden
    by what the program set with `jax.config` (read only when it imported JAX)."""
    configured = _jax_backend.mtls_config()
    found = []
    for option, name in _USER_SETTINGS:
        value: str | None = getattr(spec, name)
        source = spec.sources.get(name, "")
        set_by_program = configured.get(option)
        if set_by_program is not None and set_by_program != value:
            value, source = set_by_program, "jax.config"
        if value:
            found.append(UserSetting(name, value, source))
    return tuple(found)


def _on_loopback(address: str | None) -> bool:
    if address is None:
        return True
    host = address.rsplit(":", 1)[0].strip("[]")
    return host == "localhost" or _core.is_loopback_address(host)


def _policy(spec: _core.ClusterSpec) -> str:
    """`KDIST_TLS="required" (from the environment)`, `tls="off" (argument)`."""
    source = spec.sources.get("tls", "default")  # in sources only when set
    if source == "argument":
        return f'tls="{spec.tls}" (argument)'
    if source == "default":
        return f'KDIST_TLS="{spec.tls}" (the default)'
    return f'{source}="{spec.tls}" (from the environment)'


def decide(spec: _core.ClusterSpec, *, check_files: bool = True, say: bool = True) -> Plan:
    """What the start will do about TLS; raises, before any side effect, when it cannot.

    Args:
        spec: The resolved configuration of a job with a coordinator.
        check_files: Whether to check the user's certificate files. Defaults to True.
        say: Whether process 0 says, in one warning line, why TLS is off where it matters
            (JAX older than 0.12 with a token off loopback; `cryptography` missing).
            Defaults to True.

    Returns:
        The plan.

    Raises:
        kdist.ConfigError: `KDIST_TLS=required` and TLS cannot be had (JAX older than
            0.12, no token, `cryptography` missing), or the user's jax_mtls_* settings are
            incomplete or their files bad; the message names the setting and its source.
    """
    required = spec.tls == "required"
    user = user_settings(spec)
    capable, jax_version = _jax_backend.mtls_supported()
    speaks = say and spec.process_id == 0
    if not capable:
        why = (
            f"JAX {jax_version} has no mutual TLS for its coordination service "
            f"(JAX {_jax_backend.MTLS_JAX} added it)"
        )
        if required:
            raise ConfigError(
                f"{_policy(spec)}: TLS for JAX's coordination service needs JAX "
                f"{_jax_backend.MTLS_JAX} or later, and this Python has JAX {jax_version}, which "
                f"has no mutual TLS. Upgrade JAX to {_jax_backend.MTLS_JAX} or later on every "
                "host, or set KDIST_TLS=auto to start without TLS. Nothing was started."
            )
        ignored = ", ".join(s.describe() for s in user)
        if speaks and user:
            _logger.warning(
                "%s is ignored: %s; JAX's coordination service at %s runs without TLS "
                "(neither encrypted nor authenticated). JAX %s or later would use it.",
                ignored,
                why,
                spec.coordinator_address,
                _jax_backend.MTLS_JAX,
            )
        elif (
            speaks
            and spec.has_token
            and spec.tls != "off"
            and not _on_loopback(spec.coordinator_address)
        ):
            _logger.warning(
                "JAX's coordination service at %s is neither encrypted nor authenticated: "
                "%s; the job's token guards kdist's own ports only. JAX %s or later would fix "
                "it: kdist then runs the service under mutual TLS with certificates made from "
                "the token.",
                spec.coordinator_address,
                why,
                _jax_backend.MTLS_JAX,
            )
        return Plan(OFF, why)
    if user:
        checked = _check_user(user, check_files)
        return Plan(USER, "the user's jax_mtls_* settings: " + checked, user)
    if spec.tls == "off":
        return Plan(OFF, _policy(spec))
    if not spec.has_token:
        if required:
            raise ConfigError(
                f"{_policy(spec)}: kdist makes the TLS certificates of JAX's coordination "
                "service from the job's token, and this process has none. Set "
                "KDIST_ROLL_CALL_TOKEN to the same secret in every process (or give `kdist "
                "launch --nodes` a --token-file), set JAX's jax_mtls_* settings to your own "
                "certificates, or set KDIST_TLS=auto. Nothing was started."
            )
        return Plan(OFF, "the job has no token (KDIST_ROLL_CALL_TOKEN)")
    if not cryptography_installed():
        why = "the cryptography package is not installed"
        if required:
            raise ConfigError(
                f"{_policy(spec)}: kdist makes the TLS certificates of JAX's coordination "
                f"service with the cryptography package, which is not installed: {_INSTALL}. "
                "Nothing was started."
            )
        if speaks:
            _logger.warning(
                "TLS for JAX's coordination service is off: %s; %s turns it on.", why, _INSTALL
            )
        return Plan(OFF, f"{why} ({_INSTALL})")
    binding = _core.tls_binding(spec)
    return Plan(KDIST, f"kdist's certificates for {binding.described}", binding=binding)


def _check_user(user: tuple[UserSetting, ...], check_files: bool) -> str:
    """Checks the user's settings; returns how far, in words."""
    by_keyword = {s.keyword: s for s in user}
    missing = [f"jax_{k} (JAX_{k.upper()})" for k in _FILES if k not in by_keyword]
    if missing:
        given = ", ".join(s.describe() for s in user)
        raise ConfigError(
            f"{given} set JAX's mutual TLS only in part: it needs jax_mtls_cert_file, "
            f"jax_mtls_key_file and jax_mtls_ca_file together, and {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set. Set the others (or unset these) "
            "in every process."
        )
    prefix = by_keyword.get("mtls_peer_uri_prefix")
    if prefix is not None and not prefix.value.endswith("/"):
        raise ConfigError(
            f"{prefix.describe()}: expected a prefix that ends with '/' (JAX's rule, so that "
            '"spiffe://example.org/" does not accept "spiffe://example.org.evil/...").'
        )
    if not check_files:
        return "not checked"
    named = {k: (s.value, s.describe()) for k, s in by_keyword.items()}
    if cryptography_installed():
        from kdist._start import certificates

        certificates.check_user_files(
            named["mtls_cert_file"],
            named["mtls_key_file"],
            named["mtls_ca_file"],
            named.get("mtls_peer_uri_prefix"),
        )
        return "checked (readable, key matches, valid now, chain verifies)"
    _check_with_ssl(named["mtls_cert_file"], named["mtls_key_file"], named["mtls_ca_file"])
    return f"checked in part (readable, key matches; {_INSTALL} to check validity and chain)"


def _check_with_ssl(
    certificate: tuple[str, str], key: tuple[str, str], authority: tuple[str, str]
) -> None:
    """What Python's `ssl` checks without `cryptography`: the files read and parse, and the
    key is the certificate's (not their validity, nor the chain)."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_cert_chain(certificate[0], key[0])
    except (ssl.SSLError, OSError) as error:
        raise ConfigError(
            f"{certificate[1]} with {key[1]}: expected a readable PEM certificate and its "
            f"matching, unencrypted PEM private key; loading them failed ({error}). Set the "
            "matching pair."
        ) from None
    try:
        context.load_verify_locations(cafile=authority[0])
    except (ssl.SSLError, OSError) as error:
        raise ConfigError(
            f"{authority[1]}: expected a readable file of PEM certificates of the authorities "
            f"to trust; loading it failed ({error})."
        ) from None


def make(plan: Plan, spec: _core.ClusterSpec) -> Credentials | None:
    """This process's mutual TLS settings for JAX, or None when the plan is off.

    Under KDIST, makes this process's key and certificate signed by the job's authority
    and writes them, with the authority, to private files (`secret_files`).
    """
    if plan.mode == OFF:
        return None
    if plan.mode == USER:
        keywords: dict[str, object] = {s.keyword: s.value for s in plan.user}
        keywords["verify_secure_credentials"] = True
        return Credentials(keywords)
    binding = plan.binding
    assert binding is not None
    from kdist._start import certificates

    made = certificates.make_process_credentials(
        binding.ca_seed, binding.peer_uri_prefix, binding.process_uri, spec.process_id
    )
    files = SecretFiles()
    try:
        keywords = {
            "mtls_cert_file": files.write("tls-certificate.pem", made.certificate),
            "mtls_key_file": files.write("tls-key.pem", made.key),
            "mtls_ca_file": files.write("tls-authority.pem", made.authority),
            "mtls_peer_uri_prefix": binding.peer_uri_prefix,
            "verify_secure_credentials": True,
        }
    except BaseException:
        files.close()
        raise
    _logger.info(
        "TLS for JAX's coordination service: this process's certificate (%s) is signed by "
        "the authority of %s; its key and certificates live %s",
        binding.process_uri,
        binding.described,
        files.where,
    )
    return Credentials(keywords, files)


class BackgroundMake:
    """Makes the credentials on a helper thread while the roll call waits (importing
    `cryptography` and signing take about a tenth of a second). `result()` waits for it
    and re-raises its error."""

    def __init__(self, plan: Plan, spec: _core.ClusterSpec) -> None:
        self._plan = plan
        self._spec = spec
        self._thread: threading.Thread | None = None
        self._made: Credentials | None = None
        self._error: BaseException | None = None
        self._done = False

    def start(self) -> None:
        """Starts making them (once); nothing to do when the plan needs nothing made."""
        if self._thread is not None or self._plan.mode != KDIST:
            return
        self._thread = threading.Thread(target=self._run, name="kdist-make-tls", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._made = make(self._plan, self._spec)
        except BaseException as error:  # re-raised by result() in the caller's thread
            self._error = error

    def result(self) -> Credentials | None:
        """The credentials (made here if start() never ran); raises what making raised."""
        if self._thread is None:
            if not self._done:
                self._done = True
                self._made = make(self._plan, self._spec)
            return self._made
        self._thread.join()
        self._thread = None
        self._done = True
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._made

    def discard(self) -> None:
        """The start failed: waits for the helper thread (none is left behind) and removes
        whatever it made; makes nothing."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._done = True
        self._error = None
        if self._made is not None:
            self._made.close()
            self._made = None
