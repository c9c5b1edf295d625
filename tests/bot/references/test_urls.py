"""Which base URLs a reference may use (bot/references/urls.py), every spelling an attacker
might try."""

from __future__ import annotations

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


@given(st.ip_addresses())
def test_every_literal_address_is_judged_by_what_it_is(address: object) -> None:
    import ipaddress

    ip = ipaddress.ip_address(str(address))
    mapped = getattr(ip, "ipv4_mapped", None) or ip
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    # Multicast is refused too, though Python counts some of it as global.
    assert (private_host(host) is None) == (mapped.is_global and not mapped.is_multicast)
