"""Reviewers' pages: the refinement queue, a refinement's detail with the decision form, and
the reward shapings the critic proposed."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views import View

from webapp.accounts import roles
from webapp.accounts.permissions import PermissionGate
from webapp.review import selectors
from webapp.review.evidence import SAFE_MARGIN
from webapp.review.forms import DecisionForm, QueueFilterForm
from webapp.review.models import Refinement
from webapp.review.services import DECISIONS, refinement_decide
from webapp.training.selectors.runs import run_get
from webapp.validation import query_id

PAGE_SIZE = 50


def _detail_context(refinement: Refinement, *, can_decide: bool) -> dict:
    """The refinement page's context: the row, what the reviewer weighs in words, the form."""
    evidence = selectors.refinement_evidence(refinement=refinement)
    return {
        "refinement": refinement,
        "evidence": evidence,
        "verdict": evidence.verdict,
        "rounds": evidence.rounds,
        "diagrams": evidence.diagrams,
        "safe_margin": SAFE_MARGIN,
        "form": DecisionForm(),
        "can_decide": can_decide,
    }


class QueueView(PermissionGate, View):
    permission_required = roles.VIEW_REFINEMENTS

    def get(self, request: HttpRequest) -> HttpResponse:
        form = QueueFilterForm(request.GET or None)
        filters = (
            form.filters() if request.GET else {"status": "pending", "run_id": None, "simulation": "any"}
        )
        if request.GET and not form.is_valid():
            messages.error(
                request,
                "some filters were not valid and were ignored: "
                + "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()),
            )
        page = Paginator(selectors.refinement_queue(**filters), PAGE_SIZE).get_page(request.GET.get("page"))
        return render(
            request,
            "review/queue.html",
            {
                "form": form if request.GET else QueueFilterForm(initial=filters),
                "filters": filters,
                "page": page,
                "counts": selectors.refinement_counts(),
                "run_ids": selectors.refinement_run_ids(),
            },
        )


class RefinementDetailView(PermissionGate, View):
    permission_required = roles.VIEW_REFINEMENTS

    def get(self, request: HttpRequest, run_pk: int, pk: int) -> HttpResponse:
        refinement = selectors.refinement_get(run_id=run_pk, pk=pk)
        if refinement is None:
            raise Http404(f"run {run_pk} has no refinement {pk}")
        return render(
            request,
            "review/refinement_detail.html",
            _detail_context(refinement, can_decide=request.user.has_perm(roles.DECIDE_REFINEMENTS)),
        )


class RefinementDecideView(PermissionGate, View):
    permission_required = roles.DECIDE_REFINEMENTS
    http_method_names = ["post"]

    def post(self, request: HttpRequest, run_pk: int, pk: int) -> HttpResponse:
        run = run_get(pk=run_pk)
        refinement = selectors.refinement_find(pk=pk)
        if run is None or refinement is None:
            raise Http404(f"no refinement {pk} in run {run_pk}")
        form = DecisionForm(request.POST)
        if not form.is_valid():
            for field, errors in form.errors.items():
                messages.error(request, f"{field}: {' '.join(errors)}")
            return self._back(refinement, status=400, request=request)
        try:
            refinement_decide(
                refinement=refinement,
                run=run,
                reviewer=request.user,
                decision=form.cleaned_data["decision"],
                comment=form.cleaned_data["comment"],
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
            return self._back(refinement, status=409, request=request)
        done = DECISIONS[form.cleaned_data["decision"]].value  # approved, rejected
        messages.success(request, f"refinement {refinement.refinement_id} {done}")
        return HttpResponseRedirect(reverse("review:queue"))

    @staticmethod
    def _back(refinement: Refinement, *, status: int, request: HttpRequest) -> HttpResponse:
        """Show the refinement again, with the message, under the status that says why."""
        refinement = selectors.refinement_get(run_id=refinement.run_id, pk=refinement.pk)
        return render(
            request,
            "review/refinement_detail.html",
            _detail_context(refinement, can_decide=True),
            status=status,
        )


class ShapingListView(PermissionGate, View):
    permission_required = roles.VIEW_SHAPINGS

    def get(self, request: HttpRequest) -> HttpResponse:
        run_id = request.GET.get("run", "")
        if run_id and query_id(run_id) is None:
            messages.error(request, f"run {run_id[:20]!r} is not a run id (digits 0-9); showing all runs")
            run_id = ""
        page = Paginator(
            selectors.shaping_list(run_id=query_id(run_id) if run_id else None), PAGE_SIZE
        ).get_page(request.GET.get("page"))
        return render(request, "review/shaping_list.html", {"page": page, "run_id": run_id})
