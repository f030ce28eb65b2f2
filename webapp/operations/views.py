"""Operators' and engineers' live pages: session list and start form, the console, the replay,
the EpisodeData export, and the JSON endpoints the console's buttons call (decide, what-if,
apply, acknowledge, explain, control). Views read through selectors and write through services;
refusals come back as ``{"error": ...}`` with status 400 (409 when another decision won).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views import View

from ace_core import live  # the grid's modules load when first used here (ace_core.lazy)
from webapp import validation
from webapp.accounts import roles
from webapp.accounts.permissions import PermissionGate
from webapp.live.session_messages import decision_dict, recommendation_dict, session_dict
from webapp.operations import mirror, selectors, services
from webapp.operations.errors import DecisionConflictError, OperationsError
from webapp.operations.forms import SessionForkForm, SessionStartForm
from webapp.operations.models import LiveSession, SessionStatus
from webapp.operations.services import COMMENT_MAX_LENGTH, SPEED_RANGE
from webapp.training.selectors.deployments import deployment_current


def _session_or_404(pk: int) -> LiveSession:
    session = selectors.session_get(pk=pk)
    if session is None:
        raise Http404(f"no live session {pk}")
    return session


def _refused(error: OperationsError) -> JsonResponse:
    return JsonResponse(
        {"error": str(error)}, status=409 if isinstance(error, DecisionConflictError) else 400
    )


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        return validation.json_object(request.body)
    except validation.InputError as error:
        raise OperationsError(str(error)) from None


def _checked(check: Any, *args: Any, **kwargs: Any) -> Any:
    """A field of the body through a :mod:`webapp.validation` check, refused as OperationsError."""
    try:
        return check(*args, **kwargs)
    except validation.InputError as error:
        raise OperationsError(str(error)) from None


def _int_field(data: dict[str, Any], name: str) -> int:
    return _checked(validation.integer, data.get(name), name)


def _comment(data: dict[str, Any]) -> str:
    return _checked(validation.text, data.get("comment", ""), "comment", max_length=COMMENT_MAX_LENGTH)


def _action(data: dict[str, Any]) -> dict[str, Any]:
    return _checked(validation.live_action, data.get("action"))


class SessionListView(PermissionGate, View):
    permission_required = roles.VIEW_SESSIONS

    def get(self, request: HttpRequest) -> HttpResponse:
        sessions = selectors.session_list()[:100]
        return render(request, "operations/session_list.html", {"sessions": sessions})


class SessionStartView(PermissionGate, View):
    permission_required = roles.START_SESSIONS

    def get(self, request: HttpRequest) -> HttpResponse:
        deployment = deployment_current()
        days = self._days(deployment)
        return self._page(request, SessionStartForm(days=days), deployment, days)

    @staticmethod
    def _days(deployment: Any) -> list[Any]:
        return selectors.session_days(deployment.checkpoint.run.env) if deployment else []

    def _page(
        self,
        request: HttpRequest,
        form: SessionStartForm,
        deployment: Any,
        days: list[Any],
        status: int = 200,
    ) -> HttpResponse:
        context = {
            "form": form,
            "deployment": deployment,
            "days": days,
            "days_not_computed": sum(day.survived is None for day in days),
        }
        return render(request, "operations/session_start.html", context, status=status)

    def post(self, request: HttpRequest) -> HttpResponse:
        deployment = deployment_current()
        days = self._days(deployment)
        form = SessionStartForm(request.POST, days=days)
        if form.is_valid():
            try:
                session = services.session_start(user=request.user, **form.cleaned_data)
            except OperationsError as error:
                form.add_error(None, str(error))
            else:
                messages.success(request, f"live session {session.pk} started")
                return HttpResponseRedirect(reverse("operations:console", args=[session.pk]))
        return self._page(request, form, deployment, days, status=400)


class ConsoleView(PermissionGate, View):
    permission_required = roles.VIEW_SESSIONS

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        session = _session_or_404(pk)
        config = {
            "session": session_dict(session),
            "socket": f"/ws/live/{session.pk}/",
            "urls": {
                "control": reverse("operations:control", args=[pk]),
                "decide": reverse("operations:decide", args=[pk]),
                "whatIf": reverse("operations:what_if", args=[pk]),
                "apply": reverse("operations:apply", args=[pk]),
                "ack": reverse("operations:alarm_ack", args=[pk, 0]).replace("/0/", "/{id}/"),
                "explain": reverse("operations:explain", args=[pk, 0]).replace("/0/", "/{id}/"),
            },
            "canOperate": request.user.has_perm(roles.OPERATE_SESSIONS),
            "canControl": request.user.has_perm(roles.CONTROL_SESSIONS),
        }
        return render(request, "operations/console.html", {"session": session, "config": config})


class _JsonAction(PermissionGate, View):
    permission_required = roles.OPERATE_SESSIONS

    def post(self, request: HttpRequest, pk: int, **kwargs: Any) -> JsonResponse:
        session = _session_or_404(pk)
        try:
            return JsonResponse(self.act(request, session, _body(request), **kwargs))
        except OperationsError as error:
            return _refused(error)

    def act(
        self, request: HttpRequest, session: LiveSession, data: dict[str, Any], **kwargs: Any
    ) -> dict[str, Any]:
        raise NotImplementedError


class ControlView(_JsonAction):
    permission_required = roles.CONTROL_SESSIONS

    def act(self, request, session, data, **kwargs):
        speed = data.get("speed_seconds")
        if speed is not None:
            speed = _checked(
                validation.number, speed, "speed_seconds", low=SPEED_RANGE[0], high=SPEED_RANGE[1]
            )
        command = _checked(validation.text, data.get("command"), "command", max_length=20)
        if command == "stop" and not request.user.has_perm(roles.START_SESSIONS):
            raise OperationsError("only engineers may stop a session; pause it instead")
        updated = services.session_control(
            session_id=session.pk, user=request.user, command=command, speed_seconds=speed
        )
        return {"session": session_dict(updated)}


class DecideView(_JsonAction):
    def act(self, request, session, data, **kwargs):
        decision = services.recommendation_decide(
            session_id=session.pk,
            recommendation_id=_int_field(data, "recommendation"),
            user=request.user,
            step=_int_field(data, "step"),
            decision=_checked(validation.text, data.get("decision"), "decision", max_length=20),
            comment=_comment(data),
        )
        return {"decision": decision_dict(decision)}


class WhatIfView(_JsonAction):
    def act(self, request, session, data, **kwargs):
        return {
            "what_if": mirror.what_if(session=session, step=_int_field(data, "step"), action=_action(data))
        }


class ApplyView(_JsonAction):
    def act(self, request, session, data, **kwargs):
        decision = services.action_apply(
            session_id=session.pk,
            user=request.user,
            step=_int_field(data, "step"),
            action=_action(data),
            comment=_comment(data),
        )
        return {"decision": decision_dict(decision)}


class AlarmAckView(_JsonAction):
    def act(self, request, session, data, alarm_pk: int = 0, **kwargs):
        alarm = services.alarm_acknowledge(session_id=session.pk, alarm_id=alarm_pk, user=request.user)
        return {"alarm": alarm.pk, "acknowledged_at": alarm.acknowledged_at.isoformat()}


class ExplainView(_JsonAction):
    def act(self, request, session, data, rec_pk: int = 0, **kwargs):
        rec = services.explanation_request(session_id=session.pk, recommendation_id=rec_pk, user=request.user)
        return {"recommendation": recommendation_dict(rec)}


class ReplayView(PermissionGate, View):
    permission_required = roles.VIEW_SESSIONS

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        return render(request, "operations/replay.html", _replay_context(_session_or_404(pk)))


def _replay_context(session: LiveSession) -> dict[str, Any]:
    return {
        "session": session,
        "replay": {"layout": session.layout, "frames": selectors.replay_frames(session=session)},
    }


class ForkView(PermissionGate, View):
    """POST ``step``: a new paused session opening at that step of this one
    (:func:`services.session_fork`), then its console; a refusal re-shows the replay with the
    reason (400), and nothing is made."""

    permission_required = roles.START_SESSIONS

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        session = _session_or_404(pk)
        form = SessionForkForm(request.POST)
        try:
            if not form.is_valid():
                raise OperationsError(
                    " ".join(f"{name}: {e}" for name, errors in form.errors.items() for e in errors)
                )
            fork = services.session_fork(session_id=session.pk, user=request.user, **form.cleaned_data)
        except OperationsError as error:
            context = _replay_context(session) | {"fork_error": str(error)}
            return render(request, "operations/replay.html", context, status=400)
        return HttpResponseRedirect(reverse("operations:console", args=[fork.pk]))


class ShiftSummaryView(PermissionGate, View):
    """A session in figures for the shift's hand-over (:func:`selectors.shift_summary`)."""

    permission_required = roles.VIEW_SESSIONS

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        session = _session_or_404(pk)
        summary = selectors.shift_summary(session=session)
        return render(request, "operations/summary.html", {"session": session, "summary": summary})


class ExportView(PermissionGate, View):
    permission_required = roles.VIEW_SESSIONS

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        session = _session_or_404(pk)
        if session.status in (SessionStatus.RUNNING, SessionStatus.PAUSED) or session.current_step < 1:
            return HttpResponse(
                f"session {pk} is {session.status} at step {session.current_step}; only a session that ended "
                "after at least one step can be exported",
                status=400,
                content_type="text/plain",
            )
        tmp = Path(tempfile.mkdtemp(prefix=f"gridace-session-{pk}-"))
        folder = live.export_episode(
            env_name=session.env,
            scenario_index=session.scenario_index,
            seed=session.seed,
            actions=selectors.applied_actions(session_id=session.pk),
            out_dir=tmp / "episodes",
            start_step=session.start_step,
            max_steps=session.max_steps,
        )
        archive = live.zip_folder(folder.parent, tmp / f"session-{pk}-episode")
        return FileResponse(open(archive, "rb"), as_attachment=True, filename=archive.name)
