"""Engineers' pages of the mines of expert decisions: the list (finished mines on disk and those
started here), the launch form, a mine's detail and its progress as JSON for the page's script.
Views call selectors to read and services to write."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views import View

from ace_core.errors import ConfigError
from webapp.accounts import roles
from webapp.accounts.permissions import PermissionGate
from webapp.training.forms.mines import MineForm
from webapp.training.selectors import mines as mine_selectors
from webapp.training.services.mines import mine_launch
from webapp.training.views import error_text


def _mine_page(name: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("training:mine_detail", args=[name]))


class MineListView(PermissionGate, View):
    """The finished mines found on disk, and the mines started here (queued, running, failed)."""

    permission_required = roles.VIEW_RUNS

    def get(self, request: HttpRequest) -> HttpResponse:
        context = {
            "mines": mine_selectors.mine_list(),
            "launches": mine_selectors.mine_launches(),
            "roots": mine_selectors.mine_roots(),
            "can_launch": request.user.has_perm(roles.LAUNCH_RUNS),
        }
        return render(request, "training/mine_list.html", context)


class MineLaunchView(PermissionGate, View):
    permission_required = roles.LAUNCH_RUNS

    def get(self, request: HttpRequest) -> HttpResponse:
        env = request.GET.get("env", "")
        form = MineForm(initial={"env": env} if env else None)
        return render(request, "training/mine_launch.html", {"form": form})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = MineForm(request.POST)
        if form.is_valid():
            try:
                mine = mine_launch(launched_by=request.user, **form.cleaned_data)
            except (ConfigError, ValidationError) as error:
                form.add_error(None, error_text(error))
            else:
                messages.success(request, f"mine {mine.name} queued")
                return _mine_page(mine.name)
        return render(request, "training/mine_launch.html", {"form": form}, status=400)


def _mine_or_404(name: str) -> tuple[mine_selectors.MineInfo | None, Any]:
    """The finished mine of that name and the newest launch of it; 404 when neither exists."""
    info, launch = mine_selectors.mine_lookup(name=name)
    if info is None and launch is None:
        raise Http404("no mine of that name; choose one on the mines page")
    return info, launch


class MineDetailView(PermissionGate, View):
    permission_required = roles.VIEW_RUNS

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        info, launch = _mine_or_404(name)
        context = {
            "name": name,
            "info": info,
            "launch": launch,
            "progress": mine_selectors.mine_progress(mine=launch) if launch else None,
            "top_actions": mine_selectors.mine_top_actions(info=info) if info else [],
            "can_launch": request.user.has_perm(roles.LAUNCH_RUNS),
        }
        return render(request, "training/mine_detail.html", context)


class MineProgressView(PermissionGate, View):
    """The progress of a mine started here, as JSON, for its page's script to refresh."""

    permission_required = roles.VIEW_RUNS

    def get(self, request: HttpRequest, name: str) -> JsonResponse:
        info, launch = _mine_or_404(name)
        if launch is None:
            return JsonResponse({"name": name, "status": "succeeded", "finished": True, "error": ""})
        return JsonResponse(mine_selectors.mine_progress(mine=launch))
