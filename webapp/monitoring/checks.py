"""A system check: every entry of GRIDACE_METRICS_ALLOWED_IPS must be an address or network."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.core.checks import Error, register


@register()
def check_metrics_allowed_ips(app_configs, **kwargs) -> list[Error]:
    errors = []
    for entry in settings.GRIDACE_METRICS_ALLOWED_IPS:
        try:
            ipaddress.ip_network(entry.strip(), strict=False)
        except ValueError:
            errors.append(
                Error(
                    f"GRIDACE_METRICS_ALLOWED_IPS entry {entry!r} is not an IP address or network",
                    hint="use addresses or CIDR networks, e.g. 127.0.0.1,10.0.0.0/8",
                    id="monitoring.E001",
                )
            )
    return errors
