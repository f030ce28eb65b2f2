"""Rate limits per token: a fixed-window counter in Django's cache.

``GRIDACE_API_RATE`` is "N/s", "N/min" or "N/hour" (default 600/min). Each request adds one to
the counter of its token's current window with the cache's atomic ``incr``, so concurrent
requests are counted exactly (``cache.add`` creates the counter only if it is missing). The
default cache lives in each process: behind several web processes configure a shared cache
(e.g. Django's Redis cache) to make the limit global.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from ninja.throttling import BaseThrottle

PERIODS = {"s": 1, "sec": 1, "min": 60, "m": 60, "hour": 3600, "h": 3600}
DEFAULT_RATE = "600/min"


def parse_rate(rate: str) -> tuple[int, int]:
    """(requests, seconds) of a rate such as "600/min"."""
    count, _, period = rate.partition("/")
    if not count.strip().isdigit() or period.strip() not in PERIODS:
        raise ValueError(f"GRIDACE_API_RATE={rate!r} is not a rate; accepted: N/s, N/min or N/hour")
    return int(count), PERIODS[period.strip()]


class TokenRateThrottle(BaseThrottle):
    def allow_request(self, request: HttpRequest) -> bool:
        token = getattr(request, "auth", None)
        if token is None:
            return True  # called by the auth once the token is known
        limit, period = parse_rate(getattr(settings, "GRIDACE_API_RATE", DEFAULT_RATE))
        now = time.time()
        window = int(now // period)
        key = f"gridace:api-rate:{token.pk}:{window}"
        cache.add(key, 0, timeout=period + 1)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr: this request opens the window
            cache.add(key, 1, timeout=period + 1)
            count = 1
        if count <= limit:
            return True
        return False

    def wait(self) -> float | None:
        """Seconds until the current window ends (computed, not kept: the instance is shared)."""
        _, period = parse_rate(getattr(settings, "GRIDACE_API_RATE", DEFAULT_RATE))
        return period - time.time() % period
