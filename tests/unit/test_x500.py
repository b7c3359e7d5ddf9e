"""TLS principals: certificate subjects printed as Kafka prints them (Java's X500Principal.getName(),
RFC 2253), with every separator inside a value escaped so that no two subjects share a principal.

The expected strings were printed by `new X500Principal(der).getName()` on Temurin JDK 25 for the
same DER bytes. JDK 17 prints latin-1 string types (PrintableString, IA5String, ...) and BMPString
as if they were UTF-8 (U+FFFD or `\\00` for their bytes); newer JDKs decode each type with its own
charset, as done here. The two values that are not valid in their declared encoding are the one
deliberate difference: the JDK prints U+FFFD, which two different values can share."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given, settings
from hypothesis import strategies as st
from minibroker.broker.security.listeners import tls_principal
from minibroker.broker.security.x500 import BadName, rfc2253_name, subject_name

CN, ORG, OU, C, L, ST = "2.5.4.3", "2.5.4.10", "2.5.4.11", "2.5.4.6", "2.5.4.7", "2.5.4.8"
DC, UID, STREET = "0.9.2342.19200300.100.1.25", "0.9.2342.19200300.100.1.1", "2.5.4.9"
EMAIL, SERIAL, TITLE, SURNAME = "1.2.840.113549.1.9.1", "2.5.4.5", "2.5.4.12", "2.5.4.4"
UTF8, PRINTABLE, IA5, T61, BMP, UNIVERSAL, GENERAL = 0x0C, 0x13, 0x16, 0x14, 0x1E, 0x1C, 0x1B
KEYWORDS = {CN: "CN", ORG: "O", OU: "OU", C: "C", L: "L", ST: "ST", DC: "DC", UID: "UID", STREET: "STREET"}


def tlv(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        return bytes([tag, n]) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + body


def oid(dotted: str) -> bytes:
    arcs = list(map(int, dotted.split(".")))
    out = bytearray()
    for arc in [40 * arcs[0] + arcs[1], *arcs[2:]]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out += bytes(reversed(chunk))
    return tlv(0x06, bytes(out))


def value(v) -> bytes:
    """A str is a UTF8String; (tag, str or raw bytes) any other type."""
    if isinstance(v, str):
        return tlv(UTF8, v.encode())
    tag, raw = v
    if isinstance(raw, str):
        raw = raw.encode({BMP: "utf-16-be", UNIVERSAL: "utf-32-be", UTF8: "utf-8"}.get(tag, "latin-1"))
    return tlv(tag, raw)


def name(*rdns) -> bytes:
    """A DER Name; each RDN a (type, value) or a list of them (multi-valued), outermost first."""
    body = b""
    for rdn in rdns:
        avas = rdn if isinstance(rdn, list) else [rdn]
        body += tlv(0x31, b"".join(tlv(0x30, oid(t) + value(v)) for t, v in avas))
    return tlv(0x30, body)


JAVA_NAMES = [
    # the crafted subject of issue 21 and the multi-valued RDN it must not be confused with
    (name((CN, "alice+O=example")), r"CN=alice\+O\=example"),
    (name([(CN, "alice"), (OU, "x")]), "CN=alice+OU=x"),
    (name([(CN, "alice"), (ORG, "example")]), "CN=alice+O=example"),
    (name([(ORG, "example"), (CN, "alice")]), "O=example+CN=alice"),
    (name((ORG, "example"), (CN, "alice")), "CN=alice,O=example"),
    (name((CN, "alice,O=example")), r"CN=alice\,O\=example"),
    (name((CN, "alice\\+O=example")), r"CN=alice\\\+O\=example"),
    (name((CN, 'a"b\\c<d>e;f=g#h')), r"CN=a\"b\\c\<d\>e\;f\=g\#h"),
    (name((CN, "#alice")), r"CN=\#alice"),
    (name((CN, " alice ")), r"CN=\ alice\ "),
    (name((CN, "   ")), r"CN=\ \ \ "),
    (name((CN, "\ralice\r")), "CN=\\\ralice\\\r"),
    (name((CN, "a  b")), "CN=a  b"),
    (name((CN, "a\x00b")), r"CN=a\00b"),
    (name((CN, "a\\00b")), r"CN=a\\00b"),
    (name((CN, "alice\\")), r"CN=alice\\"),
    (name((CN, "trailing\\ ")), r"CN=trailing\\\ "),
    (name((CN, " \\ ")), r"CN=\ \\\ "),
    (name((CN, "")), "CN="),
    (name((CN, "ålice ☃ 𝄞")), "CN=ålice ☃ 𝄞"),
    (name((CN, "a\nb\tc")), "CN=a\nb\tc"),
    (name((CN, (PRINTABLE, "alice"))), "CN=alice"),
    (name((CN, (IA5, "al\xe9ce"))), "CN=aléce"),
    (name((CN, (T61, "al\xe9ce"))), "CN=aléce"),
    (name((CN, (GENERAL, "x y"))), "CN=x y"),
    (name((CN, (BMP, "ålice ☃"))), "CN=ålice ☃"),
    (name((CN, (UNIVERSAL, "alice"))), "CN=#1c14000000610000006c000000690000006300000065"),
    (name((CN, (0x02, b"\x05"))), "CN=#020105"),
    (
        name((EMAIL, (IA5, "alice@example.com")), (CN, "alice")),
        "CN=alice,1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d",
    ),
    (
        name((SERIAL, (PRINTABLE, "42")), (TITLE, "boss"), (SURNAME, "Doe")),
        "2.5.4.4=#0c03446f65,2.5.4.12=#0c04626f7373,2.5.4.5=#13023432",
    ),
    (
        name(
            (C, (PRINTABLE, "DE")),
            (ST, "Bayern"),
            (L, "M\xfcnchen"),
            (STREET, "Hauptstr. 1"),
            (ORG, "Ex"),
            (OU, "Eng"),
            (CN, "bob"),
        ),
        "CN=bob,OU=Eng,O=Ex,STREET=Hauptstr. 1,L=München,ST=Bayern,C=DE",
    ),
    (name((DC, (IA5, "com")), (DC, (IA5, "example")), (UID, "bob")), "UID=bob,DC=example,DC=com"),
    (name([(CN, "a"), (OU, "b"), (ORG, "c")], (CN, "d")), "CN=d,CN=a+OU=b+O=c"),
    (name((CN, "x"), ("1.3.6.1.4.1.99999.1", "custom")), "1.3.6.1.4.1.99999.1=#0c06637573746f6d,CN=x"),
    (name(), ""),
    # not valid in their declared encoding: the JDK prints U+FFFD ("CN=\ufffd\ufffd", "CN=\ufffd")
    (name((CN, (UTF8, b"\xff\xfe"))), "CN=#0c02fffe"),
    (name((CN, (BMP, b"\x00"))), "CN=#1e0100"),
]


@pytest.mark.parametrize("der,expected", JAVA_NAMES)
def test_names_print_as_java_prints_them(der, expected):
    assert rfc2253_name(der) == expected


def test_distinct_subjects_in_the_table_have_distinct_names():
    """Two entries print alike only when they are the same name in different string types."""
    by_name: dict[str, list[bytes]] = {}
    for der, expected in JAVA_NAMES:
        by_name.setdefault(expected, []).append(der)
    shared = {n: ders for n, ders in by_name.items() if len(ders) > 1}
    assert set(shared) == {"CN=aléce"}  # IA5String and T61String of the same latin-1 text


# An RFC 2253 parser for the names printed above, to show the printing loses nothing.


def _split(text: str, sep: str) -> list[str]:
    parts, current, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            current.append(text[i : i + 2])
            i += 2
            continue
        if c == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            if text[i + 1 : i + 3] == "00":
                out.append("\0")
                i += 3
            else:
                out.append(text[i + 1])
                i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse(printed: str) -> list[list[tuple[str, str]]]:
    """Outermost RDN first, as `name()` takes them; types as keywords or dotted OIDs."""
    if not printed:
        return []
    rdns = []
    for rdn in reversed(_split(printed, ",")):
        avas = []
        for ava in _split(rdn, "+"):
            keyword, sep, raw = ava.partition("=")
            assert sep and "\\" not in keyword
            avas.append((keyword, _unescape(raw)))
        rdns.append(avas)
    return rdns


values = st.text(
    alphabet=st.sampled_from(list(',=+<>#;"\\ \r\x00a0é☃𝄞\n')) | st.characters(codec="utf-8"), max_size=12
)
attribute = st.tuples(st.sampled_from(list(KEYWORDS)), values)
subjects = st.lists(st.lists(attribute, min_size=1, max_size=3), max_size=5)


@settings(max_examples=400, deadline=None)
@given(subjects)
def test_printed_names_parse_back_to_the_same_subject(rdns):
    """Injective: the printed name gives back every RDN, attribute and value, so two different
    subjects can never print (and so authorize) alike."""
    printed = rfc2253_name(name(*rdns))
    assert parse(printed) == [[(KEYWORDS[t], v) for t, v in rdn] for rdn in rdns]


def test_malformed_der_is_refused():
    good = name((CN, "alice"))
    for bad in (b"", good[:-1], b"\x31" + good[1:], b"\x30\x85" + b"\x00" * 5):
        with pytest.raises(BadName):
            rfc2253_name(bad)
    with pytest.raises(BadName):
        rfc2253_name(tlv(0x30, tlv(0x31, b"")))  # an empty RDN


def _certificate(subject: x509.Name) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issuer, with+specials")]))
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.DER)


class _VerifiedPeer:
    """What tls_principal reads of an ssl.SSLObject: the verified peer certificate, if any."""

    def __init__(self, der: bytes | None):
        self.der = der

    def getpeercert(self, binary_form: bool = False):
        if binary_form:
            return self.der
        return {"subject": ()} if self.der else {}


def test_tls_principal_is_the_subject_of_the_certificate():
    crafted = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice+O=example")])
    multi = x509.Name(
        [
            x509.RelativeDistinguishedName(
                [
                    x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "example"),
                ]
            )
        ]
    )
    plain = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example"),
            x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
        ]
    )
    assert tls_principal(_VerifiedPeer(_certificate(plain))) == "User:CN=alice,O=Example"
    assert tls_principal(_VerifiedPeer(_certificate(crafted))) == r"User:CN=alice\+O\=example"
    # a two-valued RDN in its encoded order (DER sorts a SET OF: the shorter CN comes first)
    assert tls_principal(_VerifiedPeer(_certificate(multi))) == "User:CN=alice+O=example"
    # the issuer (the Name before the subject in the certificate) is never taken for it
    assert subject_name(_certificate(plain)) == "CN=alice,O=Example"
    assert tls_principal(_VerifiedPeer(None)) is None
    assert tls_principal(None) is None
