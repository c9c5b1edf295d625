"""Which base URLs a reference may use (bot/references/urls.py), every spelling an attacker
might try."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.references.urls import UnsafeURL, check_base_url, private_host


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com",
        "https://api.example.com/v1",
        "http://models.example.org:8080/v1/",
        "https://8.8.8.8/v1",
        "https://[2001:4860:4860::8888]/v1",
    ],
)
def test_public_urls_are_allowed(url: str) -> None:
    assert check_base_url(url, allow_private=False) == url


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:8080", "loopback"),
        ("http://localhost:8080", "local or metadata host name"),
        ("http://LOCALHOST./v1", "local or metadata host name"),
        ("http://api.localhost", "local or metadata host name"),
        ("http://[::1]:9000", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://127.1/", "loopback"),
        ("http://2130706433/", "loopback"),
        ("http://0x7f000001/", "loopback"),
        ("http://0177.0.0.1/", "loopback"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://metadata.google.internal/computeMetadata/v1", "local or metadata host name"),
        ("http://[fd00:ec2::254]/", "private"),
        ("http://100.100.100.200/", "reserved or shared"),
        ("http://10.0.0.5/v1", "private"),
        ("http://192.168.1.10/v1", "private"),
        ("http://172.16.3.4/v1", "private"),
        ("http://[fe80::1%25eth0]/", "link-local"),
        ("http://printer.local/", "local or metadata host name"),
        ("http://intranet/", "single-label"),
        ("http://224.0.0.1/", "multicast"),
    ],
)
def test_private_loopback_and_metadata_addresses_are_refused(url: str, why: str) -> None:
    with pytest.raises(UnsafeURL, match=why):
        check_base_url(url, allow_private=False)
    assert check_base_url(url, allow_private=True) == url  # the group may allow them


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/passwd", "http or https"),
        ("ftp://api.example.com", "http or https"),
        ("gopher://127.0.0.1", "http or https"),
        ("api.example.com/v1", "http or https"),
        ("https://", "no host"),
        ("https://user:pw@api.example.com", "user name or password"),
        ("https://api.example.com:99999", "not a valid URL"),
    ],
)
def test_other_schemes_and_malformed_urls_are_refused_even_when_private_is_allowed(
    url: str, why: str
) -> None:
    for allow in (False, True):
        with pytest.raises(UnsafeURL, match=why):
            check_base_url(url, allow_private=allow)


def _reaches(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address an IPv6 spelling reaches, written apart from the code under test."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    packed = ip.packed
    if packed[:12] == bytes(10) + b"\xff\xff":  # ::ffff:a.b.c.d
        return ipaddress.IPv4Address(packed[12:])
    if packed[:2] == b"\x20\x02":  # 2002:aabb:ccdd:: (6to4)
        return ipaddress.IPv4Address(packed[2:6])
    if packed[:12] == b"\x00\x64\xff\x9b" + bytes(8):  # 64:ff9b::a.b.c.d (NAT64)
        return ipaddress.IPv4Address(packed[12:])
    if packed[:12] == bytes(12) and int(ip) > 1:  # ::a.b.c.d (IPv4-compatible)
        return ipaddress.IPv4Address(packed[12:])
    return ip


@given(st.ip_addresses())
def test_every_literal_address_is_judged_by_what_it_is(address: object) -> None:
    ip = ipaddress.ip_address(str(address))
    reached = _reaches(ip)
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    # Multicast is refused too, though Python counts some of it as global; so is a local NAT64.
    public = reached.is_global and not reached.is_multicast
    if ip in ipaddress.IPv6Network("64:ff9b:1::/48"):
        public = False
    assert (private_host(host) is None) == public


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
        ("64:ff9b::10.0.0.1", "private"),
        ("2002:a9fe:a9fe::", "link-local"),
        ("2002:7f00:1::", "loopback"),
        ("::127.0.0.1", "loopback"),
        ("64:ff9b:1::a", "private"),
    ],
)
def test_ipv6_spellings_of_a_private_ipv4_address_are_refused(address: str, why: str) -> None:
    with pytest.raises(UnsafeURL, match=why):
        check_base_url(f"http://[{address}]/v1", allow_private=False)


def test_ipv6_spellings_of_a_public_ipv4_address_are_allowed() -> None:
    # 6to4 and NAT64 of 93.184.215.14: judged by that address, on every Python 3.11.x.
    for address in ("2002:5db8:d70e::1", "64:ff9b::5db8:d70e"):
        assert private_host(address) is None
