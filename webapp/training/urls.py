"""Training run pages."""

from django.urls import path

from webapp.training import views

app_name = "training"

urlpatterns = [
    path("", views.RunListView.as_view(), name="run_list"),
    path("launch/", views.RunLaunchView.as_view(), name="run_launch"),
    path("compare/", views.RunCompareView.as_view(), name="run_compare"),
    path("<int:pk>/", views.RunDetailView.as_view(), name="run_detail"),
    path("<int:pk>/cancel/", views.RunCancelView.as_view(), name="run_cancel"),
    path("<int:pk>/resume/", views.RunResumeView.as_view(), name="run_resume"),
    path("<int:pk>/evaluate/", views.RunEvaluateView.as_view(), name="run_evaluate"),
    path(
        "<int:run_pk>/checkpoints/<int:pk>/deploy/",
        views.CheckpointDeployView.as_view(),
        name="checkpoint_deploy",
    ),
]
