"""Mines of expert decisions over HTTP: the finished mines and the launches (the mines page),
one mine with its most played topologies (a mine's page), and a launch validated by the mine
form and queued by the same service."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.http import Http404, HttpRequest
from ninja import Router, Status

from webapp.accounts import roles
from webapp.api.auth import gate
from webapp.api.endpoints.common import responses
from webapp.api.errors import ApiError
from webapp.api.schemas.mines import MineLaunchIn, MineLaunchOut, MineListOut, MineOut
from webapp.training.forms.mines import MineForm
from webapp.training.models import Mine
from webapp.training.selectors import mines as mine_selectors
from webapp.training.services.mines import mine_launch

router = Router(tags=["training"])


def summary_dict(info: mine_selectors.MineInfo) -> dict[str, Any]:
    summary = dataclasses.asdict(info)
    summary.pop("path")  # where the server keeps it: not the client's business
    return summary


def launch_dict(mine: Mine) -> dict[str, Any]:
    progress = mine_selectors.mine_progress(mine=mine)
    return {
        "id": mine.pk,
        "name": mine.name,
        "env": mine.env,
        "status": mine.status,
        "spec": mine.spec,
        "done": progress["done"],
        "total": progress["total"],
        "finished": progress["finished"],
        "error": mine.error,
        "launched_by": mine.launched_by.get_username(),
        "created_at": mine.created_at,
    }


def _form(payload: MineLaunchIn) -> MineForm:
    """The mine form filled with its defaults, overridden by the settings the client gave."""
    fields = MineForm().fields
    data = {name: field.initial for name, field in fields.items()}
    data.update({name: value for name, value in payload.model_dump().items() if value is not None})
    return MineForm(data={name: "" if value is None else str(value) for name, value in data.items()})


@router.get("/mines", response=responses(MineListOut), **gate(roles.VIEW_RUNS))
def mine_list(request: HttpRequest) -> dict[str, Any]:
    """The finished mines found on disk, and the mines started here (queued, running, failed)."""
    return {
        "finished": [summary_dict(info) for info in mine_selectors.mine_list()],
        "launches": [launch_dict(mine) for mine in mine_selectors.mine_launches()],
    }


@router.post("/mines", response=responses(MineLaunchOut, status=201), **gate(roles.LAUNCH_RUNS))
def mine_create(request: HttpRequest, payload: MineLaunchIn) -> Status:
    """Queue a mine of the train days, validated as the mine form validates it (400 names the
    setting and what is accepted; 409 when the same mine is already running or finished)."""
    form = _form(payload)
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        raise ApiError(400, " ".join(errors), field=None if field == "__all__" else field)
    mine = mine_launch(launched_by=request.user, **form.cleaned_data)
    return Status(201, launch_dict(mine_selectors.mine_launch_latest(name=mine.name)))


@router.get("/mines/{name}", response=responses(MineOut), **gate(roles.VIEW_RUNS))
def mine_detail(request: HttpRequest, name: str) -> dict[str, Any]:
    """A mine by its directory's name: its figures once finished, its newest launch here, and its
    most played topology actions in words."""
    info, launch = mine_selectors.mine_lookup(name=name)
    if info is None and launch is None:
        raise Http404(f"no mine {name!r}; the mines operation lists them")
    return {
        "name": name,
        "summary": summary_dict(info) if info else None,
        "launch": launch_dict(launch) if launch else None,
        "top_actions": mine_selectors.mine_top_actions(info=info) if info else [],
    }
