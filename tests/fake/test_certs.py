"""The throw-away certificate is trusted for 127.0.0.1 and localhost only: what its key signs
for another name fails verification (a real TLS handshake, in memory)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from adk_live_resume.fault_proxy.certs import TlsMaterial, create_tls_material


def _signed_by(tls: TlsMaterial, names: list[x509.GeneralName], directory: Path) -> ssl.SSLContext:
    """A server context presenting a leaf certificate for ``names``, signed with ``tls``'s key
    (what someone holding that key could make)."""
    issuer_key = serialization.load_pem_private_key(tls.key_path.read_bytes(), password=None)
    assert isinstance(issuer_key, rsa.RSAPrivateKey)
    issuer = x509.load_pem_x509_certificate(tls.cert_path.read_bytes())
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.UTC)
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "leaf")]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
        .sign(issuer_key, hashes.SHA256())
    )
    cert_path, key_path = directory / "leaf.pem", directory / "leaf-key.pem"
    cert_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    return context


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, hostname: str) -> None:
    """A TLS handshake between the two contexts through memory buffers; raises what the
    client's verification raises."""
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    client_side = client.wrap_bio(c_in, c_out, server_hostname=hostname)
    server_side = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, side in (("client", client_side), ("server", server_side)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return
    raise AssertionError("handshake did not finish")


@pytest.fixture
def tls() -> Iterator[TlsMaterial]:
    material = create_tls_material()
    yield material
    material.cleanup()


def test_the_certificate_itself_verifies_for_127_0_0_1_and_localhost(tls: TlsMaterial) -> None:
    for hostname in ("127.0.0.1", "localhost"):
        _handshake(tls.server_context(), tls.client_context(), hostname)


def test_its_key_signs_nothing_the_client_trusts_outside_localhost(
    tls: TlsMaterial, tmp_path: Path
) -> None:
    # control: a leaf it signs for localhost verifies
    _handshake(
        _signed_by(tls, [x509.DNSName("localhost")], tmp_path), tls.client_context(), "localhost"
    )
    forged = _signed_by(tls, [x509.DNSName("generativelanguage.googleapis.com")], tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError, match="permitted subtree violation"):
        _handshake(forged, tls.client_context(), "generativelanguage.googleapis.com")
    other_ip = _signed_by(tls, [x509.IPAddress(ipaddress.ip_address("10.0.0.1"))], tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError, match="permitted subtree violation"):
        _handshake(other_ip, tls.client_context(), "10.0.0.1")


def test_the_constraint_is_critical_and_names_only_the_loopback(tls: TlsMaterial) -> None:
    cert = x509.load_pem_x509_certificate(tls.cert_path.read_bytes())
    constraints = cert.extensions.get_extension_for_class(x509.NameConstraints)
    assert constraints.critical
    assert set(constraints.value.permitted_subtrees or ()) == {
        x509.IPAddress(ipaddress.ip_network("127.0.0.1/32")),
        x509.DNSName("localhost"),
    }
    assert tls.key_path.stat().st_mode & 0o077 == 0
