"""Audit log pages."""

from django.urls import path

from webapp.audit import views

app_name = "audit"

urlpatterns = [
    path("", views.AuditListView.as_view(), name="entry_list"),
    path("export.csv", views.AuditExportView.as_view(), name="export"),
]
