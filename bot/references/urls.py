"""Which base URLs a reference may be sent to (DESIGN §5): http or https, and, unless the group
allows private addresses, no loopback, private, link-local, shared, reserved or metadata address.

The references are called from the host, with the host's network, so a base URL is a way to make
the bot send the arbiter's context (task text, turn outputs) to a place a group member chose: an
internal service, or the cloud metadata endpoint. Literal addresses are judged by what they are,
in every spelling a client may accept (`127.1`, `2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`);
names that always mean "this machine" or "the local network" (`localhost`, `*.localhost`,
`*.local`, `*.internal`, `metadata.google.internal`, …) are refused by name. Other names are not
resolved here: DNS at start-up proves nothing about DNS at call time; bot/references/network.py
makes the same check (`private_host`) on the addresses of every connection, when it is made.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

# Names that resolve to this machine, its link or a cloud's metadata service on any sane network.
_LOCAL_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "ip6-loopback",
        "metadata",
        "instance-data",
        "metadata.google.internal",
        "metadata.azure.com",
    }
)
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".lan", ".localdomain")


class UnsafeURL(ValueError):
    """A base URL a reference may not use; the message says why, for the settings error."""


def check_base_url(url: str, *, allow_private: bool) -> str:
    """`url` unchanged when a reference may use it; UnsafeURL saying why otherwise."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise UnsafeURL(f"not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise UnsafeURL(f"must be an http or https URL (got scheme {parts.scheme or 'none'!r})")
    if not host:
        raise UnsafeURL("has no host")
    if parts.username is not None or parts.password is not None:
        raise UnsafeURL("must not carry a user name or password: use key_env for the key")
    if allow_private:
        return url
    why = private_host(host)
    if why:
        raise UnsafeURL(
            f"points at {why} ({host}); references are called from the bot's host, so such "
            "addresses are refused unless the group sets allow_private_urls = true"
        )
    return url


def private_host(host: str) -> str | None:
    """What kind of non-public place `host` is, or None when it is a public address or name."""
    name = host.lower().rstrip(".")
    address = _literal_address(name)
    if address is not None:
        return _address_kind(address)
    if name in _LOCAL_NAMES or name.endswith(_LOCAL_SUFFIXES):
        return "a local or metadata host name"
    if "." not in name:
        return "a single-label host name (a local network name)"
    return None


def _literal_address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(name.strip("[]").split("%")[0])
    except ValueError:
        pass
    else:
        if isinstance(address, ipaddress.IPv6Address):
            return _embedded_ipv4(address) or address
        return address
    # The legacy forms inet_aton accepts (and so do many HTTP clients): 127.1, 2130706433,
    # 0x7f000001, 0177.0.0.1. A name made only of digits, dots and hex is one of them or invalid.
    if all(c in "0123456789abcdefx." for c in name) and any(c.isdigit() for c in name):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(name))
        except OSError:
            return None
    return None


# IPv6 spellings that reach an IPv4 address (a resolver may answer them too): mapped
# (::ffff:a.b.c.d), 6to4 (2002:aabb:ccdd::), NAT64's well-known prefix (64:ff9b::a.b.c.d) and the
# deprecated IPv4-compatible form (::a.b.c.d). They are judged by the IPv4 address they carry,
# the same on every Python (whose ipaddress tables for these prefixes changed over 3.11.x).
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # a local network's own translator
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    carried = address.ipv4_mapped or address.sixtofour
    if carried is not None:
        return carried
    if address in _NAT64 or (address in _V4_COMPATIBLE and int(address) > 1):  # not :: or ::1
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _address_kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if address in _NAT64_LOCAL:
        return "a private address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata lives there)"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved or shared address"
    return None
