"""TLS for JAX's coordination service (issue 57): the plan each process makes before any
side effect (kdist's certificates, the user's own, or none, and why), the certificates
kdist makes from the token, the checks of a user's files, where the secret files live.

The jobs themselves: tests/start/test_tls_jobs.py (loopback) and
tests/hosts/test_netns_tls.py (hosts, a stranger).
"""

from __future__ import annotations

import datetime
import logging
import os
import re
import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes

import kdist
from helpers import certs
from helpers.support import clean_env, free_port, run_python
from kdist import _core, _jax_backend
from kdist._start import certificates, config, environment_fingerprint, tls
from kdist._start.secret_files import SecretFiles

_MTLS_VARIABLES = ("JAX_MTLS_CERT_FILE", "JAX_MTLS_KEY_FILE", "JAX_MTLS_CA_FILE")


@pytest.fixture(autouse=True)
def _no_user_mtls(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*_MTLS_VARIABLES, "JAX_MTLS_PEER_URI_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_jax_backend, "mtls_config", dict)  # nothing set with jax.config


def _jax(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """Makes the installed JAX look like `version` to the plan (0.12 and later: mTLS)."""
    capable = tuple(int(p) for p in version.split(".")[:2]) >= (0, 12)
    monkeypatch.setattr(_jax_backend, "mtls_supported", lambda: (capable, version))


def _spec(
    monkeypatch: pytest.MonkeyPatch,
    *,
    token: str | None = "the job's token",
    process_id: int = 0,
    address: str = "127.0.0.1:1234",
    **variables: str,
) -> _core.ClusterSpec:
    if token is None:
        monkeypatch.delenv("KDIST_ROLL_CALL_TOKEN", raising=False)
    else:
        monkeypatch.setenv("KDIST_ROLL_CALL_TOKEN", token)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return config.resolve(address, 2, process_id)


# --- The plan ---------------------------------------------------------------------------


def test_auto_with_a_token_on_jax_0_12_uses_kdist_s_certificates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _jax(monkeypatch, "0.12.0.1")
    spec = _spec(monkeypatch, KDIST_JOB_ID="t57", KDIST_RESTART_COUNT="2")
    assert (spec.tls, spec.has_token) == ("auto", True)
    assert "tls" not in spec.sources  # named only when set: the sources a job had stay
    plan = tls.decide(spec)
    assert plan.mode == tls.KDIST
    assert plan.describe() == 'on: kdist\'s certificates for attempt 2 of job "t57"'
    assert plan.fingerprint_value() == plan.describe()
    assert plan.binding is not None
    assert re.fullmatch(r"kdist://job-[0-9a-f]{16}/attempt-2/", plan.binding.peer_uri_prefix)


def test_the_token_never_crosses_into_python(monkeypatch: pytest.MonkeyPatch) -> None:
    _jax(monkeypatch, "0.12.0.1")
    token = "s3cret-token-value"
    binding = _core.tls_binding(_spec(monkeypatch, token=token))
    spec = _spec(monkeypatch, token=token)
    assert token not in repr(spec) and token not in str(spec.sources)
    assert token.encode() not in binding.ca_seed and len(binding.ca_seed) == 48
    assert token not in binding.peer_uri_prefix


@pytest.mark.parametrize(
    ("token", "variables", "why"),
    [
        (None, {}, "off: the job has no token (KDIST_ROLL_CALL_TOKEN)"),
        ("t", {"KDIST_TLS": "off"}, 'off: KDIST_TLS="off" (from the environment)'),
    ],
)
def test_auto_without_a_token_and_off_are_off_without_a_word(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    token: str | None,
    variables: dict[str, str],
    why: str,
) -> None:
    _jax(monkeypatch, "0.12.0.1")
    plan = tls.decide(_spec(monkeypatch, token=token, address="10.0.0.1:1234", **variables))
    assert (plan.mode, plan.describe()) == (tls.OFF, why)
    assert caplog.records == []


def test_a_bad_policy_is_named_with_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KDIST_TLS", "maybe")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape('KDIST_TLS="maybe" (from the environment): expected "off"'),
    ):
        config.resolve("127.0.0.1:1234", 2, 0)
    with pytest.raises(kdist.ConfigError, match=re.escape('tls="yes" (argument): expected')):
        config.resolve("127.0.0.1:1234", 2, 0, tls="yes")
    with pytest.raises(TypeError, match="tls=True"):
        config.resolve("127.0.0.1:1234", 2, 0, tls=True)


def test_required_without_a_token_is_refused_naming_the_setting_and_the_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _jax(monkeypatch, "0.12.0.1")
    spec = _spec(monkeypatch, token=None, KDIST_TLS="required")
    with pytest.raises(kdist.ConfigError) as refused:
        tls.decide(spec)
    message = str(refused.value)
    assert message.startswith('KDIST_TLS="required" (from the environment): ')
    assert "KDIST_ROLL_CALL_TOKEN" in message and "Nothing was started" in message


def test_required_under_a_jax_without_mtls_is_refused_naming_tls_and_jax_0_12(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _jax(monkeypatch, "0.10.2")
    with pytest.raises(kdist.ConfigError) as refused:
        tls.decide(_spec(monkeypatch, KDIST_TLS="required"))
    message = str(refused.value)
    assert "TLS for JAX's coordination service needs JAX 0.12 or later" in message
    assert "JAX 0.10.2" in message and "KDIST_TLS=auto" in message


def test_required_is_met_by_the_argument_too(monkeypatch: pytest.MonkeyPatch) -> None:
    _jax(monkeypatch, "0.12.0.1")
    monkeypatch.setenv("KDIST_ROLL_CALL_TOKEN", "t")
    spec = config.resolve("127.0.0.1:1234", 2, 0, tls="required")
    assert (spec.tls, spec.sources["tls"]) == ("required", "argument")
    assert tls.decide(spec).mode == tls.KDIST


def test_an_old_jax_with_a_token_off_loopback_says_one_line_in_process_0(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _jax(monkeypatch, "0.10.2")
    caplog.set_level(logging.WARNING, "kdist")
    plan = tls.decide(_spec(monkeypatch, address="10.0.0.1:1234"))
    assert plan.describe() == (
        "off: JAX 0.10.2 has no mutual TLS for its coordination service (JAX 0.12 added it)"
    )
    (line,) = [r.getMessage() for r in caplog.records]
    assert (
        "JAX's coordination service at 10.0.0.1:1234 is neither encrypted nor authenticated" in line
    )
    assert "JAX 0.12 or later would fix it" in line
    caplog.clear()
    tls.decide(_spec(monkeypatch, address="10.0.0.1:1234", process_id=1))  # the others: no line
    tls.decide(_spec(monkeypatch, address="127.0.0.1:1234"))  # loopback: no line
    tls.decide(_spec(monkeypatch, token=None, address="10.0.0.1:1234"))  # no token: no line
    assert caplog.records == []


def test_auto_without_cryptography_says_why_and_what_to_install(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _jax(monkeypatch, "0.12.0.1")
    monkeypatch.setattr(tls, "cryptography_installed", lambda: False)
    caplog.set_level(logging.WARNING, "kdist")
    plan = tls.decide(_spec(monkeypatch))
    assert plan.mode == tls.OFF and "cryptography package is not installed" in plan.why
    (line,) = [r.getMessage() for r in caplog.records]
    assert "TLS for JAX's coordination service is off" in line and "kdist[tls]" in line
    with pytest.raises(kdist.ConfigError, match=r"pip install 'kdist\[tls\]'"):
        tls.decide(_spec(monkeypatch, KDIST_TLS="required"))


def test_the_plan_is_an_entry_of_the_environment_fingerprint_that_must_match() -> None:
    entries = environment_fingerprint.collect({}, [], tls="on: kdist's certificates for x")
    (entry,) = [e for e in entries if e.name == "tls"]
    assert (entry.value, entry.must_match) == ("on: kdist's certificates for x", True)
    assert "tls" not in {e.name for e in environment_fingerprint.collect({}, [])}


# --- kdist's certificates -----------------------------------------------------------------


def _credentials(
    monkeypatch: pytest.MonkeyPatch, process_id: int, **variables: str
) -> certificates.ProcessCredentials:
    binding = _core.tls_binding(_spec(monkeypatch, process_id=process_id, **variables))
    return certificates.make_process_credentials(
        binding.ca_seed, binding.peer_uri_prefix, binding.process_uri, process_id
    )


def test_every_process_of_an_attempt_trusts_the_others_and_no_other_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    zero = _credentials(monkeypatch, 0)
    one = _credentials(monkeypatch, 1)
    later = _credentials(monkeypatch, 1, KDIST_RESTART_COUNT="1")
    authority = x509.load_pem_x509_certificate(zero.authority)
    assert authority == x509.load_pem_x509_certificate(one.authority) or (
        authority.public_key() == x509.load_pem_x509_certificate(one.authority).public_key()
    )
    theirs = x509.load_pem_x509_certificate(one.certificate)
    theirs.verify_directly_issued_by(authority)
    (uri,) = theirs.extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    ).value.get_values_for_type(x509.UniformResourceIdentifier)
    assert uri.endswith("/attempt-0/process-1")
    stale = x509.load_pem_x509_certificate(later.certificate)
    with pytest.raises(Exception):  # noqa: B017 (InvalidSignature, or an issuer mismatch)
        stale.verify_directly_issued_by(authority)
    # Each process's own key: never the same twice, never the authority's.
    assert zero.key != one.key


def _handshake(
    tmp_path: Path, server: certificates.ProcessCredentials, client: certificates.ProcessCredentials
) -> str:
    """A TLS 1.3 handshake as gRPC makes it (both sides present and verify a certificate
    against their own authority file): "ok" or the server's error."""
    files = {}
    for side, made in (("server", server), ("client", client)):
        for part in ("certificate", "key", "authority"):
            path = tmp_path / f"{side}-{part}.pem"
            path.write_bytes(getattr(made, part))
            files[side, part] = str(path)
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(files["server", "certificate"], files["server", "key"])
    serving.load_verify_locations(files["server", "authority"])
    serving.verify_mode = ssl.CERT_REQUIRED
    connecting = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    connecting.check_hostname = False  # JAX checks the URI prefix instead
    connecting.load_cert_chain(files["client", "certificate"], files["client", "key"])
    connecting.load_verify_locations(files["client", "authority"])
    left, right = socket.socketpair()
    outcome: list[str] = []

    def serve() -> None:
        try:
            with serving.wrap_socket(left, server_side=True) as secure:
                secure.sendall(b"x")
            outcome.append("ok")
        except (ssl.SSLError, OSError) as error:
            outcome.append(f"server refused: {error}")

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with connecting.wrap_socket(right) as secure:
            secure.recv(1)
    except (ssl.SSLError, OSError):
        pass
    finally:
        right.close()
        thread.join(10)
    return outcome[0] if outcome else "no answer"


def test_the_certificates_pass_an_openssl_handshake_and_another_attempt_s_do_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    zero = _credentials(monkeypatch, 0)
    assert _handshake(tmp_path, zero, _credentials(monkeypatch, 1)) == "ok"
    # Each side refuses the other's authority ("unknown ca" from whichever checks first).
    stale = _credentials(monkeypatch, 1, KDIST_RESTART_COUNT="1")
    assert re.search("UNKNOWN_CA|CERTIFICATE_VERIFY_FAILED", _handshake(tmp_path, zero, stale))
    other_job = _credentials(monkeypatch, 1, KDIST_ROLL_CALL_TOKEN="another job's token")
    assert re.search("UNKNOWN_CA|CERTIFICATE_VERIFY_FAILED", _handshake(tmp_path, zero, other_job))


# --- The user's own certificates -----------------------------------------------------------


@pytest.fixture
def user_files(tmp_path: Path) -> dict[str, Path]:
    """A CA, a good process certificate with the URI spiffe://example.org/job/process, and
    bad ones: expired, not yet valid, another CA's, without a URI."""
    ca = certs.authority()
    other = certs.authority("another CA")
    files = {"ca": ca.write(tmp_path, "ca")[0]}
    made = {
        "good": certs.leaf(ca),
        "expired": certs.leaf(
            ca, not_before=certs.NOW - 10 * certs.DAY, not_after=certs.NOW - certs.DAY
        ),
        "early": certs.leaf(ca, not_before=certs.NOW + certs.DAY),
        "other": certs.leaf(other),
        "no_uri": certs.leaf(ca, uri=None),
    }
    for name, issued in made.items():
        files[name], files[f"{name}_key"] = issued.write(tmp_path, name)
    return files


def _user(
    monkeypatch: pytest.MonkeyPatch, cert: Path, key: Path, ca: Path, **extra: str
) -> tls.Plan:
    _jax(monkeypatch, "0.12.0.1")
    variables = {
        "JAX_MTLS_CERT_FILE": str(cert),
        "JAX_MTLS_KEY_FILE": str(key),
        "JAX_MTLS_CA_FILE": str(ca),
    }
    return tls.decide(_spec(monkeypatch, token=None, **variables, **extra))


def test_the_user_s_good_certificates_win_and_are_checked(
    monkeypatch: pytest.MonkeyPatch, user_files: dict[str, Path]
) -> None:
    plan = _user(
        monkeypatch,
        user_files["good"],
        user_files["good_key"],
        user_files["ca"],
        JAX_MTLS_PEER_URI_PREFIX="spiffe://example.org/",
        KDIST_TLS="required",  # met by the user's own
    )
    assert plan.mode == tls.USER
    assert plan.describe().startswith("on: the user's jax_mtls_* settings: checked (readable")
    assert [(s.keyword, s.source) for s in plan.user] == [
        ("mtls_cert_file", "JAX_MTLS_CERT_FILE"),
        ("mtls_key_file", "JAX_MTLS_KEY_FILE"),
        ("mtls_ca_file", "JAX_MTLS_CA_FILE"),
        ("mtls_peer_uri_prefix", "JAX_MTLS_PEER_URI_PREFIX"),
    ]
    made = tls.make(plan, config.resolve("127.0.0.1:1234", 2, 0))
    assert made is not None and made.files is None
    assert made.keywords["mtls_cert_file"] == str(user_files["good"])


_FROM_ENV = r" \(from the environment\)"
_PREFIX = "JAX_MTLS_PEER_URI_PREFIX"
# (certificate, key, extra variables, what the message says), by case.
_BAD_FILES = {
    "unreadable": (
        "missing",
        "good_key",
        {},
        rf'JAX_MTLS_CERT_FILE=".*missing"{_FROM_ENV} cannot be read by this process \(No such',
    ),
    "another key": (
        "good",
        "other_key",
        {},
        rf'JAX_MTLS_KEY_FILE=".*other.key"{_FROM_ENV} is not the key of JAX_MTLS_CERT_FILE',
    ),
    "expired": (
        "expired",
        "expired_key",
        {},
        r"JAX_MTLS_CERT_FILE=.*: the certificate 'CN=test process' expired on",
    ),
    "not yet valid": ("early", "early_key", {}, r"is valid only from .* Check this host's clock"),
    "another authority": (
        "other",
        "other_key",
        {},
        rf'JAX_MTLS_CERT_FILE=".*other.pem"{_FROM_ENV} does not chain to any certificate of '
        "JAX_MTLS_CA_FILE",
    ),
    "no URI": (
        "no_uri",
        "no_uri_key",
        {_PREFIX: "spiffe://example.org/"},
        f"carries no URI that starts with {_PREFIX}",
    ),
    "prefix without a slash": (
        "good",
        "good_key",
        {_PREFIX: "spiffe://example.org"},
        rf'{_PREFIX}="spiffe://example.org"{_FROM_ENV}: expected a prefix that ends with \'/\'',
    ),
    "a certificate for a key": (
        "good",
        "good",
        {},
        r"JAX_MTLS_KEY_FILE=.* holds no unencrypted PEM private key",
    ),
}


@pytest.mark.parametrize("case", sorted(_BAD_FILES))
def test_bad_user_certificates_are_named_with_their_source_before_the_start(
    monkeypatch: pytest.MonkeyPatch, user_files: dict[str, Path], case: str
) -> None:
    cert, key, extra, expected = _BAD_FILES[case]
    path = user_files.get(cert, user_files["ca"].parent / cert)
    with pytest.raises(kdist.ConfigError, match=expected):
        _user(monkeypatch, path, user_files[key], user_files["ca"], **extra)


def test_a_part_of_the_user_s_settings_is_named_with_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, user_files: dict[str, Path]
) -> None:
    _jax(monkeypatch, "0.12.0.1")
    spec = _spec(monkeypatch, JAX_MTLS_CERT_FILE=str(user_files["good"]))
    with pytest.raises(kdist.ConfigError) as refused:
        tls.decide(spec)
    assert str(refused.value).startswith(
        f'JAX_MTLS_CERT_FILE="{user_files["good"]}" (from the environment) set JAX\'s mutual '
        "TLS only in part: it needs jax_mtls_cert_file, jax_mtls_key_file and "
        "jax_mtls_ca_file together, and jax_mtls_key_file (JAX_MTLS_KEY_FILE) and "
        "jax_mtls_ca_file (JAX_MTLS_CA_FILE) are not set."
    )


def test_what_the_program_set_with_jax_config_is_named_as_such(
    monkeypatch: pytest.MonkeyPatch, user_files: dict[str, Path]
) -> None:
    monkeypatch.setattr(
        _jax_backend, "mtls_config", lambda: {"jax_mtls_cert_file": str(user_files["expired"])}
    )
    with pytest.raises(
        kdist.ConfigError, match=r'^jax_mtls_cert_file=".*expired.pem" \(set with jax.config\): '
    ):
        _user(monkeypatch, user_files["good"], user_files["expired_key"], user_files["ca"])


def test_without_cryptography_the_user_s_files_are_checked_as_ssl_can(
    monkeypatch: pytest.MonkeyPatch, user_files: dict[str, Path]
) -> None:
    monkeypatch.setattr(tls, "cryptography_installed", lambda: False)
    plan = _user(monkeypatch, user_files["expired"], user_files["expired_key"], user_files["ca"])
    assert "checked in part (readable, key matches" in plan.why
    with pytest.raises(
        kdist.ConfigError, match=r"JAX_MTLS_CERT_FILE=.* with JAX_MTLS_KEY_FILE=.*matching"
    ):
        _user(monkeypatch, user_files["good"], user_files["other_key"], user_files["ca"])


def test_the_user_s_settings_under_an_old_jax_are_ignored_saying_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, user_files: dict[str, Path]
) -> None:
    caplog.set_level(logging.WARNING, "kdist")
    _jax(monkeypatch, "0.10.2")
    variables = {
        "JAX_MTLS_CERT_FILE": str(user_files["good"]),
        "JAX_MTLS_KEY_FILE": "k",
        "JAX_MTLS_CA_FILE": "c",
    }
    assert tls.decide(_spec(monkeypatch, **variables)).mode == tls.OFF
    (line,) = [r.getMessage() for r in caplog.records]
    assert (
        line.startswith('JAX_MTLS_CERT_FILE="')
        and "is ignored: JAX 0.10.2 has no mutual TLS" in line
    )


# --- Where the files live -----------------------------------------------------------------


def test_secret_files_live_in_memory_and_vanish_when_closed() -> None:
    files = SecretFiles()
    path = files.write("key.pem", b"private")
    assert path.startswith("/proc/self/fd/") and files.where == "in memory (memfd)"
    with open(path, "rb") as file:
        assert file.read() == b"private"
    assert not os.path.realpath(path).startswith(("/tmp", "/var"))
    files.close()
    assert not os.path.exists(path)


def test_without_memory_files_they_live_in_a_private_folder_removed_on_close() -> None:
    files = SecretFiles(in_memory=False)
    path = Path(files.write("key.pem", b"private"))
    folder = path.parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == b"private"
    files.close()
    assert not folder.exists()


def test_the_authority_is_the_same_in_every_process_but_for_its_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = x509.load_pem_x509_certificate(_credentials(monkeypatch, 0).authority)
    b = x509.load_pem_x509_certificate(_credentials(monkeypatch, 1).authority)
    assert a.tbs_certificate_bytes == b.tbs_certificate_bytes
    assert a.fingerprint(hashes.SHA256()) != b"" and a.not_valid_after_utc.year == 9999
    assert a.not_valid_before_utc < datetime.datetime.now(datetime.UTC)


# --- In a real process, before any side effect --------------------------------------------


@pytest.mark.compat
def test_required_tls_under_a_jax_without_mtls_refuses_to_start_before_anything() -> None:
    """At the compat run's JAX (0.5.1, 0.10.2): KDIST_TLS=required refuses in
    initialize(), naming TLS and JAX 0.12, with JAX not imported and the coordinator's port
    never bound."""
    if _jax_backend.mtls_supported()[0]:
        pytest.skip("this JAX has mutual TLS: the compat run (JAX 0.5.1, 0.10.2) tests this")
    port = free_port()
    result = run_python(
        "import json, socket, sys, kdist\n"
        "try:\n"
        f"    kdist.initialize('127.0.0.1:{port}', 2, 0)\n"
        "except kdist.ConfigError as e:\n"
        "    error = str(e)\n"
        "s = socket.socket(); s.bind(('127.0.0.1', " + str(port) + ")); s.close()\n"
        "print(json.dumps({'error': error, 'jax': 'jax' in sys.modules}))\n",
        env=clean_env(1, KDIST_TLS="required", KDIST_ROLL_CALL_TOKEN="t"),
    )
    assert result.returncode == 0, result.describe()
    report = result.report()
    assert report["jax"] is False
    message = str(report["error"])
    assert message.startswith('KDIST_TLS="required" (from the environment): TLS for JAX')
    assert "needs JAX 0.12 or later" in message


def test_bad_user_certificates_stop_initialize_before_the_roll_call(
    user_files: dict[str, Path],
) -> None:
    """Process 1 of a job whose coordinator never answers: the user's expired certificate is
    named at once (the roll call would have waited for its deadline)."""
    if not _jax_backend.mtls_supported()[0]:
        pytest.skip("this JAX has no mutual TLS: it ignores the jax_mtls_* settings")
    result = run_python(
        "import json, sys, time, kdist\n"
        "began = time.monotonic()\n"
        "try:\n"
        f"    kdist.initialize('127.0.0.1:{free_port()}', 2, 1, timeout=30)\n"
        "except kdist.ConfigError as e:\n"
        "    error = str(e)\n"
        "print(json.dumps({'error': error, 'jax': 'jax' in sys.modules,\n"
        "                  'seconds': time.monotonic() - began}))\n",
        env=clean_env(
            1,
            JAX_MTLS_CERT_FILE=str(user_files["expired"]),
            JAX_MTLS_KEY_FILE=str(user_files["expired_key"]),
            JAX_MTLS_CA_FILE=str(user_files["ca"]),
        ),
    )
    assert result.returncode == 0, result.describe()
    report = result.report()
    assert report["jax"] is False and float(report["seconds"]) < 15  # type: ignore[arg-type]
    assert re.match(
        r'JAX_MTLS_CERT_FILE=".*expired.pem" \(from the environment\): the certificate',
        str(report["error"]),
    )
