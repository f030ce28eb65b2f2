"""Login lockouts (django-axes) keyed on the (username, address) pair, with a cool-off that grows.

Failures count per pair (``AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]``): an attacker's
failures from other addresses do not lock the user out of theirs, and one address's failures do
not lock the other users there. A pair's lockout lasts ``GRIDACE_LOGIN_LOCKOUT_MINUTES`` and
doubles for each further ``AXES_FAILURE_LIMIT`` failures (failures while locked still count), up
to ``GRIDACE_LOGIN_LOCKOUT_MAX_HOURS``. Each failure stores when its pair's lockout ends
(``AXES_USE_ATTEMPT_EXPIRATION``), so one pair's longer cool-off survives another's shorter one.
"""

from __future__ import annotations

from datetime import timedelta

from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest

DEFAULT_BASE_MINUTES = 15.0
DEFAULT_MAX_HOURS = 24.0


def base_cool_off() -> timedelta:
    return timedelta(minutes=getattr(settings, "GRIDACE_LOGIN_LOCKOUT_MINUTES", DEFAULT_BASE_MINUTES))


def cool_off_for(failures: int) -> timedelta:
    """How long a pair with ``failures`` failed log-ins stays locked once locked."""
    limit = max(1, int(settings.AXES_FAILURE_LIMIT))
    longest = timedelta(hours=getattr(settings, "GRIDACE_LOGIN_LOCKOUT_MAX_HOURS", DEFAULT_MAX_HOURS))
    doublings = min(max(0, failures - limit) // limit, 20)
    return min(base_cool_off() * 2**doublings, longest)


def pair_failures(username: str | None, address: str | None) -> int:
    attempts = AccessAttempt.objects.filter(username=username, ip_address=address)
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


def cool_off(request: HttpRequest | None = None) -> timedelta:
    """``AXES_COOLOFF_TIME``: the cool-off of the request's (username, address) pair."""
    post = getattr(request, "POST", None)
    address = getattr(request, "axes_ip_address", None)
    if post is None or address is None:
        return base_cool_off()
    username = post.get(getattr(settings, "AXES_USERNAME_FORM_FIELD", "username"))
    return cool_off_for(pair_failures(username, address))
