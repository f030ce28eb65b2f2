"""What every endpoint shares: the documented error responses and offset paging."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from ninja import Query

from webapp.api.errors import ErrorOut

MAX_PAGE = 200
DEFAULT_PAGE = 50

ERROR_CODES = (400, 401, 403, 404, 409, 413, 422, 429)


def responses(ok: Any, status: int = 200) -> dict[int, Any]:
    """The success schema and every error status, all in the one error shape."""
    return {status: ok, **dict.fromkeys(ERROR_CODES, ErrorOut)}


def limit_param() -> Any:
    return Query(DEFAULT_PAGE, ge=1, le=MAX_PAGE, description=f"items per page (1 to {MAX_PAGE})")


def offset_param() -> Any:
    return Query(0, ge=0, le=10**9, description="items to skip")


def page(items: QuerySet, *, limit: int, offset: int, to_dict: Callable[[Any], dict[str, Any]]) -> dict:
    """One page of ``items`` and how many there are in all."""
    return {
        "count": items.count(),
        "limit": limit,
        "offset": offset,
        "items": [to_dict(item) for item in items[offset : offset + limit]],
    }
