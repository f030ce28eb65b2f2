"""The site's URL map: one include per app, plus the Django admin."""

from django.contrib import admin
from django.urls import include, path

from webapp.api.api import urls as api_urls

admin.site.site_header = "GridACE administration"
admin.site.site_title = "GridACE admin"

urlpatterns = [
    path("", include("webapp.accounts.urls")),
    path("live/", include("webapp.operations.urls")),
    path("runs/", include("webapp.training.urls")),
    path("review/", include("webapp.review.urls")),
    path("audit/", include("webapp.audit.urls")),
    path("tokens/", include("webapp.api.urls")),
    path("api/v1/", api_urls()),
    path("admin/", admin.site.urls),
    path("", include("webapp.monitoring.urls")),
]
