"""Review pages."""

from django.urls import path

from webapp.review import views

app_name = "review"

urlpatterns = [
    path("", views.QueueView.as_view(), name="queue"),
    path(
        "runs/<int:run_pk>/refinements/<int:pk>/",
        views.RefinementDetailView.as_view(),
        name="refinement_detail",
    ),
    path(
        "runs/<int:run_pk>/refinements/<int:pk>/decide/",
        views.RefinementDecideView.as_view(),
        name="refinement_decide",
    ),
    path("shapings/", views.ShapingListView.as_view(), name="shaping_list"),
]
