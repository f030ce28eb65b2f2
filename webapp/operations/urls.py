"""Live console pages and the JSON endpoints its buttons call."""

from django.urls import path

from webapp.operations import day_compare_views, views

app_name = "operations"

urlpatterns = [
    path("", views.SessionListView.as_view(), name="session_list"),
    path("new/", views.SessionStartView.as_view(), name="session_start"),
    path("compare/", day_compare_views.DayCompareView.as_view(), name="day_compare"),
    path("<int:pk>/", views.ConsoleView.as_view(), name="console"),
    path("<int:pk>/control/", views.ControlView.as_view(), name="control"),
    path("<int:pk>/decide/", views.DecideView.as_view(), name="decide"),
    path("<int:pk>/whatif/", views.WhatIfView.as_view(), name="what_if"),
    path("<int:pk>/apply/", views.ApplyView.as_view(), name="apply"),
    path("<int:pk>/alarms/<int:alarm_pk>/ack/", views.AlarmAckView.as_view(), name="alarm_ack"),
    path("<int:pk>/recommendations/<int:rec_pk>/explain/", views.ExplainView.as_view(), name="explain"),
    path("<int:pk>/replay/", views.ReplayView.as_view(), name="replay"),
    path("<int:pk>/fork/", views.ForkView.as_view(), name="fork"),
    path("<int:pk>/summary/", views.ShiftSummaryView.as_view(), name="summary"),
    path("<int:pk>/export/", views.ExportView.as_view(), name="export"),
    path("<int:pk>/play-policy/", day_compare_views.DayPlayView.as_view(), name="day_play"),
]
