"""Test support for security: throwaway TLS certificates (made with `cryptography` at test time)
and the ports of a broker's listeners (read from its `broker ready` log event)."""

from __future__ import annotations

import datetime
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

KEY_PASSWORD = "key-secret"


@dataclass
class Certs:
    ca: Path  # CA certificate (truststore for both sides)
    server: Path  # server keystore: chain + encrypted key (ssl.key.password = KEY_PASSWORD)
    client_cert: Path
    client_key: Path  # unencrypted
    client_dn: str
    ca_key: Path | None = None  # unencrypted: for issue_client_cert


@dataclass
class ClientCert:
    cert: Path
    key: Path  # unencrypted


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "minibroker-tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _cert(subject, issuer, public_key, signing_key, *, ca=False, san=None):
    now = datetime.datetime.now(datetime.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(signing_key, hashes.SHA256())


def make_certs(directory: Path) -> Certs:
    directory.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert(_name("test-ca"), _name("test-ca"), ca_key.public_key(), ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert(
        _name("localhost"),
        ca.subject,
        server_key.public_key(),
        ca_key,
        san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _cert(_name("alice"), ca.subject, client_key.public_key(), ca_key)
    paths = Certs(
        directory / "ca.pem",
        directory / "server.pem",
        directory / "client.pem",
        directory / "client.key",
        "CN=alice,O=minibroker-tests",
    )
    paths.ca_key = directory / "ca.key"
    paths.ca_key.write_bytes(_private_pem(ca_key))
    paths.ca.write_bytes(ca.public_bytes(pem))
    paths.server.write_bytes(
        server.public_bytes(pem)
        + ca.public_bytes(pem)
        + server_key.private_bytes(
            pem,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(KEY_PASSWORD.encode()),
        )
    )
    paths.client_cert.write_bytes(client.public_bytes(pem))
    paths.client_key.write_bytes(_private_pem(client_key))
    return paths


def _private_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def issue_client_cert(certs: Certs, subject: x509.Name, stem: str) -> ClientCert:
    """A client certificate for `subject` (any attributes, multi-valued RDNs, escapes) signed by
    the test CA, written next to the CA as <stem>.pem / <stem>.key."""
    assert certs.ca_key is not None
    ca = x509.load_pem_x509_certificate(certs.ca.read_bytes())
    ca_key = serialization.load_pem_private_key(certs.ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _cert(subject, ca.subject, key.public_key(), ca_key)
    paths = ClientCert(certs.ca.with_name(f"{stem}.pem"), certs.ca.with_name(f"{stem}.key"))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(_private_pem(key))
    return paths


def listener_ports(broker) -> dict[str, int]:
    """{listener name: bound port} from the last `broker ready` event of a json-logging broker."""
    for line in reversed(broker.log_text().splitlines()):
        if '"broker ready"' in line:
            return json.loads(line)["listeners"]
    raise AssertionError(f"no broker ready event\n{broker.log_tail()}")


def plain_jaas(users: dict[str, str]) -> str:
    options = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {options};"
