"""A certificate's subject as Kafka names it: Java's `X500Principal.getName()` (RFC 2253).

Kafka's default principal for a TLS client is `User:` + `X500Principal.getName()` of the client
certificate's subject (DefaultKafkaPrincipalBuilder, with the default `ssl.principal.mapping.rules`).
That string is built here from the DER bytes of the certificate, as the JDK builds it
(sun.security.x509.AVA.toRFC2253String): RDNs last-to-first, the values of a multi-valued RDN joined
with `+` in their encoded order, the keywords CN, C, L, ST, O, OU, STREET, DC and UID (any other
attribute as its dotted OID with the value as `#` + the hex of its DER encoding, as for a value that
is not a string), and in a string value each of `, = + < > # ; " \\` escaped with a backslash, NUL as
`\\00`, and leading and trailing spaces (and carriage returns) escaped.

Every separator inside a value is escaped, so no two different subjects give the same name: a
certificate whose CN is `alice+O=example` is `CN=alice\\+O\\=example`, never the two-valued RDN
`CN=alice+O=example`. One deliberate difference from the JDK: a string value whose bytes are not
valid in its declared encoding (the JDK would print U+FFFD for the bad bytes, so two such values
could print the same) is printed in the `#` + hex form, which stays distinct.
"""

from __future__ import annotations

# DirectoryString types the JDK prints as text, with the charset it decodes them with
_STRING_CHARSETS = {
    0x13: "latin-1",  # PrintableString
    0x14: "latin-1",  # T61String
    0x16: "latin-1",  # IA5String
    0x1B: "latin-1",  # GeneralString
    0x1E: "utf-16-be",  # BMPString
    0x0C: "utf-8",  # UTF8String
}

# the attribute types Java names in RFC 2253 output; any other is printed as its dotted OID
_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}

_ESCAPED = frozenset(',=+<>#;"\\')

_SEQUENCE, _SET, _OID = 0x30, 0x31, 0x06


class BadName(ValueError):
    """The DER bytes are not a certificate / X.500 name this parser understands."""


def _tlv(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """(tag byte, content start, content end) of the DER element at `pos`."""
    if pos >= end:
        raise BadName("truncated element")
    tag = data[pos]
    pos += 1
    if tag & 0x1F == 0x1F:  # high tag number form: base-128 continuation bytes
        while pos < end and data[pos] & 0x80:
            pos += 1
        pos += 1
    if pos >= end:
        raise BadName("truncated length")
    length = data[pos]
    pos += 1
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or pos + count > end:
            raise BadName("bad length")
        length = int.from_bytes(data[pos : pos + count], "big")
        pos += count
    if pos + length > end:
        raise BadName("element runs past its container")
    return tag, pos, pos + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, element start, content start, content end) of each element in data[start:end]."""
    out = []
    pos = start
    while pos < end:
        tag, body, stop = _tlv(data, pos, end)
        out.append((tag, pos, body, stop))
        pos = stop
    return out


def _oid(raw: bytes) -> str:
    if not raw or raw[-1] & 0x80:
        raise BadName("bad object identifier")
    arcs, value = [], 0
    for b in raw:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(value)
            value = 0
    first = min(arcs[0] // 40, 2)
    return ".".join(map(str, [first, arcs[0] - 40 * first, *arcs[1:]]))


def _escape(text: str) -> str:
    chars = []
    for c in text:
        if c in _ESCAPED:
            chars.append("\\" + c)
        elif c == "\0":
            chars.append("\\00")
        else:
            chars.append(c)
    flat = "".join(chars)
    lead = len(flat) - len(flat.lstrip(" \r"))
    tail = max(lead, len(flat.rstrip(" \r")))
    if lead == 0 and tail == len(flat):
        return flat
    return _backslashed(flat[:lead]) + flat[lead:tail] + _backslashed(flat[tail:])


def _backslashed(edge: str) -> str:
    return "".join("\\" + c for c in edge)


def _ava(data: bytes, start: int, end: int) -> str:
    parts = _children(data, start, end)
    if len(parts) != 2 or parts[0][0] != _OID:
        raise BadName("an attribute is not (type, value)")
    (_, _, oid_start, oid_end), (tag, value_start, body, value_end) = parts
    oid = _oid(data[oid_start:oid_end])
    keyword = _KEYWORDS.get(oid)
    charset = _STRING_CHARSETS.get(tag)
    if keyword is not None and charset is not None:
        try:
            return f"{keyword}={_escape(data[body:value_end].decode(charset))}"
        except UnicodeDecodeError:
            pass  # printed as hex below, which no well-formed string value can collide with
    return f"{keyword or oid}=#{data[value_start:value_end].hex()}"


def rfc2253_name(data: bytes, start: int = 0, end: int | None = None) -> str:
    """The RFC 2253 string Java's X500Principal.getName() gives for the DER Name at data[start:]."""
    end = len(data) if end is None else end
    tag, body, stop = _tlv(data, start, end)
    if tag != _SEQUENCE:
        raise BadName("a name is not a SEQUENCE")
    rdns = []
    for rdn_tag, _, rdn_body, rdn_end in _children(data, body, stop):
        avas = _children(data, rdn_body, rdn_end)
        if rdn_tag != _SET or not avas:
            raise BadName("a relative distinguished name is not a non-empty SET")
        for ava_tag, *_ in avas:
            if ava_tag != _SEQUENCE:
                raise BadName("an attribute is not a SEQUENCE")
        rdns.append("+".join(_ava(data, b, e) for _, _, b, e in avas))
    return ",".join(reversed(rdns))


def subject_name(certificate_der: bytes) -> str:
    """The subject of a DER X.509 certificate, as Java's X500Principal.getName() prints it."""
    tag, body, stop = _tlv(certificate_der, 0, len(certificate_der))
    if tag != _SEQUENCE:
        raise BadName("a certificate is not a SEQUENCE")
    tbs_tag, _, tbs_body, tbs_end = _children(certificate_der, body, stop)[0]
    if tbs_tag != _SEQUENCE:
        raise BadName("tbsCertificate is not a SEQUENCE")
    fields = _children(certificate_der, tbs_body, tbs_end)
    if fields and fields[0][0] == 0xA0:  # [0] EXPLICIT version
        fields = fields[1:]
    # serialNumber, signature, issuer, validity, subject
    if len(fields) < 5:
        raise BadName("tbsCertificate has no subject")
    _, subject_start, _, subject_end = fields[4]
    return rfc2253_name(certificate_der, subject_start, subject_end)
