"""The API tokens page (the API itself is mounted at /api/v1/ by webapp.urls)."""

from django.urls import path

from webapp.api import views

app_name = "api"

urlpatterns = [
    path("", views.TokenListView.as_view(), name="token_list"),
    path("<int:pk>/revoke/", views.TokenRevokeView.as_view(), name="token_revoke"),
]
