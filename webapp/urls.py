"""The site's URL map: one include per app, plus the Django admin and the favicon browsers ask
for at the root."""

from typing import Any

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from webapp.api.api import urls as api_urls


class FaviconView(RedirectView):
    """``/favicon.ico`` -> the static file (its hashed name in production, read per request:
    the manifest may not exist when the URLconf is imported)."""

    permanent = True

    def get_redirect_url(self, *args: Any, **kwargs: Any) -> str:
        return static("favicon.ico")


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
    path("favicon.ico", FaviconView.as_view(), name="favicon"),
    path("", include("webapp.monitoring.urls")),
]
