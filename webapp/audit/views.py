"""The audit log page (filters, pagination) and its CSV export."""

from __future__ import annotations

import csv
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views import View

from webapp.accounts import roles
from webapp.accounts.permissions import PermissionGate
from webapp.audit.selectors import audit_actions, audit_csv_rows, audit_entry_list
from webapp.audit.summaries import entry_view

PAGE_SIZE = 100
FILTERS = ("action", "actor", "target_type", "target_id")


def _filters(request: HttpRequest) -> dict[str, str]:
    return {name: request.GET.get(name, "").strip()[:150] for name in FILTERS}


class AuditListView(PermissionGate, View):
    permission_required = roles.VIEW_AUDIT

    def get(self, request: HttpRequest) -> HttpResponse:
        filters = _filters(request)
        page = Paginator(audit_entry_list(**filters), PAGE_SIZE).get_page(request.GET.get("page"))
        query = urlencode({name: value for name, value in filters.items() if value})
        return render(
            request,
            "audit/entry_list.html",
            {
                "page": page,
                "entries": [entry_view(entry) for entry in page],
                "filters": filters,
                "actions": audit_actions(),
                "query": query,
                "can_export": request.user.has_perm(roles.EXPORT_AUDIT),
            },
        )


class AuditExportView(PermissionGate, View):
    permission_required = roles.EXPORT_AUDIT

    def get(self, request: HttpRequest) -> HttpResponse:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        csv.writer(response).writerows(audit_csv_rows(audit_entry_list(**_filters(request))))
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="gridace-audit-{stamp}.csv"'
        return response
