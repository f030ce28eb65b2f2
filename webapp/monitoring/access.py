"""Who may read ``/metrics``: clients from the allowed networks, or bearing the metrics token.

``GRIDACE_METRICS_ALLOWED_IPS``: addresses or networks (``10.0.0.0/8``) of scrapers, matched
against ``REMOTE_ADDR`` (behind a proxy, that is the proxy). ``GRIDACE_METRICS_TOKEN``: when set,
``Authorization: Bearer <token>`` is accepted from anywhere. With both empty the endpoint is off.
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest


def metrics_enabled() -> bool:
    return bool(settings.GRIDACE_METRICS_ALLOWED_IPS or settings.GRIDACE_METRICS_TOKEN)


def may_scrape(request: HttpRequest) -> bool:
    token = settings.GRIDACE_METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer ") and hmac.compare_digest(header[7:].encode(), token.encode()):
        return True
    return _address_allowed(request.META.get("REMOTE_ADDR", ""), settings.GRIDACE_METRICS_ALLOWED_IPS)


def _address_allowed(address: str, allowed: list[str]) -> bool:
    try:
        client = ipaddress.ip_address(address)
    except ValueError:
        return False
    for entry in allowed:
        try:
            if client in ipaddress.ip_network(entry.strip(), strict=False):
                return True
        except ValueError:
            continue  # a malformed entry allows nobody (checked at startup, see checks.py)
    return False
