"""Rate limits of the API, per token and per client address: fixed-window counters in Django's
cache.

``GRIDACE_API_RATE`` (per token, default 600/min) and ``GRIDACE_API_ADDRESS_RATE`` (per
``REMOTE_ADDR``, default 1200/min) are "N/s", "N/min" or "N/hour". Each request adds one to the
counter of its key's current window with the cache's atomic ``incr``, so concurrent requests are
counted exactly (``cache.add`` creates the counter only if it is missing). The default cache lives
in each process: behind several web processes configure a shared cache (e.g. Django's Redis
cache) to make the limits global.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from ninja.errors import Throttled

PERIODS = {"s": 1, "sec": 1, "min": 60, "m": 60, "hour": 3600, "h": 3600}


def parse_rate(rate: str, setting: str = "GRIDACE_API_RATE") -> tuple[int, int]:
    """(requests, seconds) of a rate such as "600/min"."""
    count, _, period = rate.partition("/")
    if not count.strip().isdigit() or not count.strip().isascii() or period.strip() not in PERIODS:
        raise ValueError(f"{setting}={rate!r} is not a rate; accepted: N/s, N/min or N/hour")
    return int(count), PERIODS[period.strip()]


class RateLimited(Throttled):
    """Over a rate limit: which one (``scope``: token or address), its rate and the seconds to wait."""

    def __init__(self, wait: float, scope: str, rate: str) -> None:
        super().__init__(wait=wait)  # type: ignore[arg-type]
        self.scope, self.rate = scope, rate


@dataclass(frozen=True)
class WindowLimit:
    """Requests per window for one kind of key, read from the setting ``setting``."""

    scope: str
    setting: str
    default: str

    def rate(self) -> str:
        return getattr(settings, self.setting, self.default)

    def check(self, key: str) -> None:
        """Count one request of ``key``; raise :class:`RateLimited` over the limit."""
        limit, period = parse_rate(self.rate(), self.setting)
        now = time.time()
        counter = f"gridace:api-rate:{self.scope}:{key}:{int(now // period)}"
        cache.add(counter, 0, timeout=period + 1)
        try:
            count = cache.incr(counter)
        except ValueError:  # expired between add and incr: this request opens the window
            cache.add(counter, 1, timeout=period + 1)
            count = 1
        if count > limit:
            raise RateLimited(wait=period - now % period, scope=self.scope, rate=self.rate())


TOKEN_LIMIT = WindowLimit("token", "GRIDACE_API_RATE", "600/min")
ADDRESS_LIMIT = WindowLimit("address", "GRIDACE_API_ADDRESS_RATE", "1200/min")
