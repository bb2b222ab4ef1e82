"""Certificates a test makes for itself (through `cryptography`): a user's own CA and
certificates for JAX's mTLS settings, good and bad, and a stranger's; and a TLS client
that says what JAX's service answered."""

from __future__ import annotations

import datetime
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

NOW = datetime.datetime.now(datetime.UTC)
DAY = datetime.timedelta(days=1)

# What an HTTP/2 client sends first (a gRPC client speaks HTTP/2): the preface, then an
# empty SETTINGS frame. A gRPC server answers with a SETTINGS frame (type 4).
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


@dataclass
class Issued:
    """A key and its certificate."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    def write(self, folder: Path, name: str) -> tuple[Path, Path]:
        """Writes `<name>.pem` (the certificate) and `<name>.key` (PKCS #8); returns both."""
        cert = folder / f"{name}.pem"
        key = folder / f"{name}.key"
        cert.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        key.write_bytes(
            self.key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return cert, key


def authority(name: str = "test CA") -> Issued:
    """A self-signed CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - DAY)
        .not_valid_after(NOW + 365 * DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return Issued(key, certificate)


def leaf(
    issuer: Issued,
    *,
    uri: str | None = "spiffe://example.org/job/process",
    not_before: datetime.datetime | None = None,
    not_after: datetime.datetime | None = None,
    name: str = "test process",
) -> Issued:
    """A certificate for a process, for server and client, issued by `issuer`."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before or NOW - DAY)
        .not_valid_after(not_after or NOW + 30 * DAY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
    )
    if uri is not None:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)]), critical=False
        )
    return Issued(key, builder.sign(issuer.key, hashes.SHA256()))


def tls_answer(
    host: str, port: int, cert: Path | None = None, key: Path | None = None, timeout: float = 5
) -> str:
    """Connects to `host:port` with TLS (ALPN h2, trusting any server: the client itself is
    what is checked), presenting `cert`/`key` when given, sends an HTTP/2 preface and says
    what came back: "http2" (a SETTINGS frame: the gRPC server talks to this client),
    "closed" (the server ended the connection without a word) or "refused: <the TLS error>".
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    if cert is not None:
        context.load_cert_chain(cert, key)
    with socket.create_connection((host, port), timeout=timeout) as plain:
        try:
            with context.wrap_socket(plain) as secure:
                secure.sendall(HTTP2_PREFACE)
                data = secure.recv(64)
        except (ssl.SSLError, ConnectionError) as error:
            return f"refused: {error}"
    if len(data) >= 4 and data[3] == 4:
        return "http2"
    return "closed" if not data else f"answered {data[:16]!r}"
