"""Where a webhook may POST, and the POST itself.

A user names the URL and a background worker sends the job's JSON there. Left open, a user
could make the worker reach the grid's own machines (loopback, the database's port), the cloud's
metadata service (169.254.169.254) or the site's private network, and tell from the error which
ports listen. So an address is refused unless it is public unicast, in every spelling the C
library accepts (127.1, 0x7f.1, 2130706433, ::ffff:127.0.0.1) and for every address a name
resolves to, unless the operator's WebhookAllowedNetworks names the host or its network. It is
checked when the URL is saved and again when the notice is sent, after resolving the name; the
send connects to the very address it checked (a name that resolves elsewhere the second time,
DNS rebinding, is not followed), and its errors never show what answered.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import re
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

ALLOWED = "WebhookAllowedNetworks"
IP = ipaddress.IPv4Address | ipaddress.IPv6Address
_HOSTNAME = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\.?$", re.I)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT


class Refused(Exception):
    """The webhook's host is a local, private or otherwise non-public address."""


class HTTPStatus(Exception):
    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status = status


def allow_list_problem(entries: list[str]) -> str | None:
    """Why the operator's allow-list is not one (None: it is)."""
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            if not _HOSTNAME.match(entry):
                return f"{entry!r} is neither a host name nor an address or network (CIDR)"
    return None


@dataclass(frozen=True)
class Allowed:
    """The operator's exceptions: host names, and addresses or networks."""

    hosts: frozenset[str] = frozenset()
    networks: tuple = ()

    @classmethod
    def of(cls, entries: list[str]) -> Allowed:
        hosts, networks = set(), []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    @classmethod
    def current(cls) -> Allowed:
        from core import gdpconfig

        return cls.of(gdpconfig.get(ALLOWED))

    def host(self, name: str) -> bool:
        return name.lower().rstrip(".") in self.hosts

    def address(self, ip: IP) -> bool:
        return any(ip in net for net in self.networks if net.version == ip.version)


def _embedded_ipv4(ip: IP) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and may be routed to (mapped, 6to4, NAT64)."""
    if ip.version != 6:
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or int(ip) >> 32 == 0:  # NAT64, or IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _kind(ip: IP) -> str | None:
    """What makes the address non-public (None: it is a public unicast address)."""
    for label, test in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("shared (carrier-grade NAT)", ip.version == 4 and ip in _SHARED),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved or not ip.is_global),
    ):
        if test:
            return label
    return None


def refusal(ip: IP, allowed: Allowed) -> str | None:
    """Why a webhook may not reach `ip` (None: it may). An IPv6 address that carries an IPv4
    one is judged by where it leads: ::ffff:127.0.0.1 is loopback, ::ffff:8.8.8.8 public."""
    if allowed.address(ip):
        return None
    inner = None if ip.is_loopback or ip.is_unspecified else _embedded_ipv4(ip)
    if inner is not None:
        return None if allowed.address(inner) else _kind(inner)
    return _kind(ip)


def literal(host: str) -> IP | None:
    """The host as an address when it is one, in any spelling: IPv6, dotted quad, or the C
    library's shorter forms (127.1, 0x7f.1, 0177.0.0.1, 2130706433)."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fA-FxX.]+", host) and not host.endswith(".."):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def resolve(host: str, port: int | None) -> list[IP]:
    """Every address the name stands for (OSError when it stands for none)."""
    found = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in found:
            found.append(ip)
    return found


def check_saved(url: str) -> None:
    """The model's and the API's validator: refuse a URL whose host is, or whose name now
    resolves to, a non-public address. A name that does not resolve is accepted (DNS may be
    down for a moment); it is checked again when a notice is sent."""
    if not url:
        return
    try:
        host = (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return  # the URL validator names what is wrong
    if not host:
        return
    allowed = Allowed.current()
    if allowed.host(host):
        return
    ip = literal(host)
    if ip is None and ":" in host:
        raise ValidationError(f"{host} is not a valid address", code="webhook_address")
    try:
        addresses = [ip] if ip is not None else resolve(host, None)
    except (OSError, UnicodeError, ValueError):
        return
    for address in addresses:
        kind = refusal(address, allowed)
        if kind:
            shown = host if host == str(address) else f"{host} ({address})"
            article = "an" if kind[0] in "aeiou" else "a"
            raise ValidationError(
                f"{shown} is {article} {kind} address: a webhook must reach a public address",
                code="webhook_address",
            )


def permitted_address(host: str, port: int, allowed: Allowed) -> IP:
    """The address to connect to, resolved now and checked: Refused if any address the name
    stands for is not allowed (a name that answers with a public and a local address is not
    followed either)."""
    ip = literal(host.rstrip("."))
    addresses = [ip] if ip is not None else resolve(host, port)
    if not addresses:
        raise OSError("no address")
    if not allowed.host(host):
        for address in addresses:
            if refusal(address, allowed):
                raise Refused(host)
    return addresses[0]


def _pinned(cls, address: str):
    """An HTTP(S) connection to the URL's host (its Host header, its TLS name) that connects to
    `address`, the one checked, rather than resolving the name again."""

    class Pinned(cls):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._create_connection = self._to_checked_address

        def _to_checked_address(self, where, timeout, source_address=None):
            return socket.create_connection((address, where[1]), timeout, source_address)

    return Pinned


def _cut(connection: http.client.HTTPConnection, done: threading.Event) -> None:
    """At the deadline: hang up, or, while the connection is still being made, as soon as
    it is (its connect has the time left as its own timeout)."""
    while not done.is_set():
        sock = connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        done.wait(0.05)


def post(url: str, data: dict, timeout: float, allowed: Allowed) -> None:
    """POST `data` as JSON to the checked address within `timeout` seconds in all (a server
    that answers a byte at a time is cut off); Refused, HTTPStatus on anything but 2xx (a
    redirect is not followed), OSError or http.client.HTTPException otherwise."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    address = permitted_address(host, port, allowed)
    cls = _pinned(
        http.client.HTTPSConnection if https else http.client.HTTPConnection, str(address)
    )
    connection = cls(host, port, timeout=timeout)
    done = threading.Event()
    deadline = threading.Timer(timeout, _cut, args=(connection, done))
    deadline.daemon = True
    deadline.start()
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request(
            "POST",
            path,
            body=json.dumps(data).encode(),
            headers={"Content-Type": "application/json", "User-Agent": "gridwms-notifications"},
        )
        status = connection.getresponse().status
    finally:
        done.set()
        deadline.cancel()
        connection.close()
    if not 200 <= status < 300:
        raise HTTPStatus(status)
