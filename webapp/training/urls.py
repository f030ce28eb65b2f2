"""Training run pages (with their tags and note, and their metrics as CSV), and the mines of expert
decisions runs can start from."""

from django.urls import path

from webapp.training import mine_views, run_views, views

app_name = "training"

urlpatterns = [
    path("", run_views.RunListView.as_view(), name="run_list"),
    path("launch/", views.RunLaunchView.as_view(), name="run_launch"),
    path("compare/", views.RunCompareView.as_view(), name="run_compare"),
    path("<int:pk>/", views.RunDetailView.as_view(), name="run_detail"),
    path("<int:pk>/cancel/", views.RunCancelView.as_view(), name="run_cancel"),
    path("<int:pk>/resume/", views.RunResumeView.as_view(), name="run_resume"),
    path("<int:pk>/evaluate/", views.RunEvaluateView.as_view(), name="run_evaluate"),
    path("<int:pk>/notes/", run_views.RunNotesView.as_view(), name="run_notes"),
    path("<int:pk>/metrics.csv", run_views.RunMetricsCsvView.as_view(), name="run_metrics_csv"),
    path("<int:pk>/episodes.csv", run_views.RunEpisodesCsvView.as_view(), name="run_episodes_csv"),
    path("mines/", mine_views.MineListView.as_view(), name="mine_list"),
    path("mines/launch/", mine_views.MineLaunchView.as_view(), name="mine_launch"),
    path("mines/<str:name>/", mine_views.MineDetailView.as_view(), name="mine_detail"),
    path("mines/<str:name>/progress/", mine_views.MineProgressView.as_view(), name="mine_progress"),
    path(
        "<int:run_pk>/checkpoints/<int:pk>/deploy/",
        views.CheckpointDeployView.as_view(),
        name="checkpoint_deploy",
    ),
    path(
        "deployments/<int:pk>/rollback/",
        views.DeploymentRollbackView.as_view(),
        name="deployment_rollback",
    ),
]
