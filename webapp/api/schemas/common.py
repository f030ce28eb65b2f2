"""What the API's bodies share: the strict, closed base of every body a client sends, the paging
fields of every list, and the pattern that keeps NUL characters out of text a client sends."""

from __future__ import annotations

from ninja import Field, Schema
from pydantic import ConfigDict

NO_NUL = r"^[^\x00]*$"
"""text a client sends must not hold NUL characters (PostgreSQL text cannot store them)"""


class ClientInput(Schema):
    """A body a client sends: typed strictly (``" 5"``, ``"+5"``, ``5.0`` and ``true`` are not
    integers, as in the forms) and closed (an unknown key is refused with 422, naming it, rather
    than ignored: ``{"confg": ...}`` must not launch a default run)."""

    model_config = ConfigDict(strict=True, extra="forbid")


class PageMeta(Schema):
    count: int = Field(description="items matching the filters, over all pages")
    limit: int
    offset: int
