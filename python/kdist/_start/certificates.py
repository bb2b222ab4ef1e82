"""X.509 for JAX's mutual TLS, through `cryptography` (kdist's `tls` extra): the job's
certificate authority and this process's certificate, made from what the core derived from
the job's token; and the checks of a user's own certificate files.

The only module that imports `cryptography`, and only when TLS is used: `import kdist` and
a start without TLS never load it (tests/package/test_import.py).

The authority's key is the P-256 key whose scalar is the core's 48-byte seed reduced
modulo the group order (FIPS 186-5, A.2.1): every process of one attempt of one job derives
the same key, and none other can. Its certificate is the same in every process but for its
signature's randomness (fixed names, serial and validity), which no verifier compares. Each
process makes its own key and certificate, signed by that authority, whose URI
(`kdist://job-<digest>/attempt-<n>/process-<id>`) is what JAX's peer check
(`mtls_peer_uri_prefix`) requires: a certificate of another attempt or job carries neither
the authority's signature nor its URI.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kdist._errors import ConfigError

# The order of P-256's group (FIPS 186-5, SEC 2).
_P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
# The authority's validity: fixed, so that every process makes the same certificate, and
# wide, so that no host's clock falls outside it. It lives as long as one attempt: its key
# is derived, never stored.
_AUTHORITY_FROM = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
_UNTIL = datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC)
# A process's certificate is valid from a day before it was made: another host's clock may
# run behind.
_CLOCK_SKEW = datetime.timedelta(days=1)
# The most certificates a chain may hold (the user's: leaf, intermediates, root).
_MAX_CHAIN = 8


@dataclass(frozen=True)
class ProcessCredentials:
    """This process's PEM files' contents for JAX's mutual TLS."""

    certificate: bytes  # this process's certificate
    key: bytes  # its private key (PKCS #8, unencrypted: JAX reads it as it is)
    authority: bytes  # the job's certificate authority: the only one trusted


def _authority_key(seed: bytes) -> ec.EllipticCurvePrivateKey:
    scalar = int.from_bytes(seed, "big") % (_P256_ORDER - 1) + 1
    return ec.derive_private_key(scalar, ec.SECP256R1())


def _authority_name(peer_uri_prefix: str) -> x509.Name:
    # "kdist://job-0123456789abcdef/attempt-0/" -> "kdist job-0123456789abcdef attempt-0"
    what = peer_uri_prefix.removeprefix("kdist://").strip("/").replace("/", " ")
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"kdist {what}"[:64])])


def make_process_credentials(
    ca_seed: bytes, peer_uri_prefix: str, process_uri: str, process_id: int
) -> ProcessCredentials:
    """The job's authority (from `ca_seed`) and this process's fresh key and certificate.

    Args:
        ca_seed: The core's seed of the job's authority (`_core.TlsBinding.ca_seed`).
        peer_uri_prefix: The prefix every certificate of the attempt carries.
        process_uri: This process's URI (the prefix, then "process-<id>").
        process_id: This process's id, for its certificate's name.

    Returns:
        The three PEM files' contents.
    """
    authority_key = _authority_key(ca_seed)
    authority_public = authority_key.public_key()
    name = _authority_name(peer_uri_prefix)
    subject_key_id = x509.SubjectKeyIdentifier.from_public_key(authority_public)
    serial = int.from_bytes(subject_key_id.digest[:16], "big") >> 1 or 1
    authority = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(authority_public)
        .serial_number(serial)
        .not_valid_before(_AUTHORITY_FROM)
        .not_valid_after(_UNTIL)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(certificate_sign=True), critical=True)
        .add_extension(subject_key_id, critical=False)
        .sign(authority_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"kdist process {process_id}")])
        )
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(_UNTIL)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(certificate_sign=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(process_uri)]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(subject_key_id),
            critical=False,
        )
        .sign(authority_key, hashes.SHA256())
    )
    return ProcessCredentials(
        certificate=certificate.public_bytes(serialization.Encoding.PEM),
        key=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        authority=authority.public_bytes(serialization.Encoding.PEM),
    )


def _key_usage(*, certificate_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not certificate_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=certificate_sign,
        crl_sign=certificate_sign,
        encipher_only=False,
        decipher_only=False,
    )


# --- The user's own certificates (jax_mtls_*) --------------------------------------------


def check_user_files(
    certificate: tuple[str, str],
    key: tuple[str, str],
    authority: tuple[str, str],
    peer_uri_prefix: tuple[str, str] | None,
    *,
    now: datetime.datetime | None = None,
) -> None:
    """Checks the user's certificate files as JAX's TLS would use them, before the start.

    Each argument is (its path or value, how messages name it: `JAX_MTLS_CERT_FILE="/p"
    (from the environment)`). Checked: every file reads and holds what it should (PEM
    certificates; an unencrypted PEM private key), the key is the certificate's, the
    certificate and its chain are valid now, the chain leads to a certificate of the CA
    file, and, with a peer URI prefix, the certificate carries a URI that starts with it
    (else JAX's peers refuse it).

    Raises:
        kdist.ConfigError: naming the file (by its setting and source), what was expected,
            what was found and what to do.
    """
    now = now or datetime.datetime.now(datetime.UTC)
    chain = _certificates(certificate, "the process's certificate (then its chain)")
    authorities = _certificates(authority, "the certificates of the authorities it trusts")
    private_key = _private_key(key)
    leaf = chain[0]
    if _public_der(private_key.public_key()) != _public_der(leaf.public_key()):
        raise ConfigError(
            f"{key[1]} is not the key of {certificate[1]}: the key's public half differs from "
            f"the certificate's (subject {leaf.subject.rfc4514_string()!r}). Expected the private "
            "key the certificate was issued for; set the matching pair."
        )
    for index, item in enumerate(chain):
        _check_valid_now(
            item, certificate[1] if index == 0 else f"{certificate[1]} (its chain)", now
        )
    _check_chain(chain, authorities, certificate, authority, now)
    if peer_uri_prefix is not None:
        uris = _uris(leaf)
        if not any(uri.startswith(peer_uri_prefix[0]) for uri in uris):
            raise ConfigError(
                f"{certificate[1]} carries no URI that starts with {peer_uri_prefix[1]}, so "
                f"JAX's peers would refuse it. Its URIs: {uris or 'none'}. Expected a "
                "certificate whose subject alternative names hold a URI with that prefix; "
                "issue one, or change the prefix."
            )


def _read(setting: tuple[str, str], what: str) -> bytes:
    try:
        with open(setting[0], "rb") as file:
            return file.read()
    except OSError as error:
        raise ConfigError(
            f"{setting[1]} cannot be read by this process ({error.strerror or error}); "
            f"expected a readable PEM file: {what}. Check the path and its permissions on "
            "this host."
        ) from None


def _certificates(setting: tuple[str, str], what: str) -> list[x509.Certificate]:
    data = _read(setting, what)
    try:
        found = x509.load_pem_x509_certificates(data)
    except ValueError as error:
        raise ConfigError(
            f"{setting[1]} holds no PEM certificate ({error}); expected {what}."
        ) from None
    return found[:_MAX_CHAIN]


def _private_key(setting: tuple[str, str]) -> Any:
    data = _read(setting, "the process's private key")
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise ConfigError(
            f"{setting[1]} holds no unencrypted PEM private key ({error}); expected the "
            "process's private key, unencrypted (JAX reads it without a password)."
        ) from None


def _public_der(key: Any) -> bytes:
    return bytes(
        key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def _check_valid_now(item: x509.Certificate, named: str, now: datetime.datetime) -> None:
    subject = item.subject.rfc4514_string()
    shown = f"(now {now:%Y-%m-%d %H:%M:%S} UTC)"
    if now > item.not_valid_after_utc:
        until = f"{item.not_valid_after_utc:%Y-%m-%d %H:%M:%S} UTC"
        raise ConfigError(
            f"{named}: the certificate {subject!r} expired on {until} {shown}; expected one "
            "valid now. Issue a new one."
        )
    if now < item.not_valid_before_utc:
        since = f"{item.not_valid_before_utc:%Y-%m-%d %H:%M:%S} UTC"
        raise ConfigError(
            f"{named}: the certificate {subject!r} is valid only from {since} {shown}; "
            "expected one valid now. Check this host's clock, or issue a new one."
        )


def _issued_by(item: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        item.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _check_chain(
    chain: list[x509.Certificate],
    authorities: list[x509.Certificate],
    certificate: tuple[str, str],
    authority: tuple[str, str],
    now: datetime.datetime,
) -> None:
    """The chain leads from the certificate, through the file's intermediates, to one of
    the authorities (or is one of them)."""
    current = chain[0]
    rest = chain[1:]
    trusted = {a.fingerprint(hashes.SHA256()) for a in authorities}
    for _ in range(_MAX_CHAIN):
        if current.fingerprint(hashes.SHA256()) in trusted:
            return
        for candidate in authorities:
            if _issued_by(current, candidate):
                _check_valid_now(candidate, authority[1], now)
                return
        following = next((c for c in rest if _issued_by(current, c)), None)
        if following is None:
            break
        rest.remove(following)
        current = following
    raise ConfigError(
        f"{certificate[1]} does not chain to any certificate of {authority[1]} "
        f"({len(authorities)} certificate(s): "
        f"{', '.join(repr(a.subject.rfc4514_string()) for a in authorities)}): the peers, which "
        f"trust those, would refuse it. The certificate was issued by "
        f"{current.issuer.rfc4514_string()!r}. Expected the CA file that signed it (or put "
        "the intermediates after the certificate in its file)."
    )


def _uris(item: x509.Certificate) -> list[str]:
    try:
        names = item.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return list(names.get_values_for_type(x509.UniformResourceIdentifier))
