"""A throw-away TLS certificate for the fake server and the fault proxy, good for 127.0.0.1 only.

The google-genai SDK always connects with ``wss://``, so the fake must speak TLS. Each
:class:`TlsMaterial` holds a fresh self-signed certificate (RSA 2048, SHA-256) whose subject
alternative names are ``IP:127.0.0.1`` and ``DNS:localhost``. It is written as PEM into a private
temporary directory that :meth:`TlsMaterial.cleanup` removes. The private key never leaves that
directory.

The certificate signs itself, so whoever trusts it (an app launched with ``--inject`` has it
in ``SSL_CERT_FILE``) trusts a CA; its X.509 name constraints (critical) permit only
``127.0.0.1`` and ``localhost``, and its path length is 0: a certificate that key signed for
any other name fails verification, so the key, should it leak, serves no other host.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["TlsMaterial", "create_tls_material"]


@dataclass(frozen=True)
class TlsMaterial:
    """Paths of a self-signed certificate and its key, in a directory of their own.

    ``cert_path`` is a PEM file usable as a CA bundle (``SSL_CERT_FILE``), since the
    certificate signs itself.
    """

    directory: Path
    cert_path: Path
    key_path: Path

    def server_context(self) -> ssl.SSLContext:
        """Return a fresh server-side SSL context presenting this certificate."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, self.key_path)
        return context

    def client_context(self) -> ssl.SSLContext:
        """Return a fresh client-side SSL context that trusts only this certificate.

        Hostname checking stays on; both ``127.0.0.1`` and ``localhost`` verify.
        """
        return ssl.create_default_context(cafile=str(self.cert_path))

    def cleanup(self) -> None:
        """Delete the directory and both files. Safe to call more than once."""
        shutil.rmtree(self.directory, ignore_errors=True)


def create_tls_material(*, valid_days: int = 2) -> TlsMaterial:
    """Generate a new key and self-signed certificate and write both to a new temp dir."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "adk-live-resume fake server")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.DNSName("localhost"),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.NameConstraints(
                permitted_subtrees=[
                    x509.IPAddress(ipaddress.ip_network("127.0.0.1/32")),
                    x509.DNSName("localhost"),
                ],
                excluded_subtrees=None,
            ),
            critical=True,
        )
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    directory = Path(tempfile.mkdtemp(prefix="fake-gemini-live-"))
    cert_path = directory / "cert.pem"
    key_path = directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return TlsMaterial(directory=directory, cert_path=cert_path, key_path=key_path)
