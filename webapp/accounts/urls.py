"""Login, logout, the home page and the login lockouts page."""

from django.contrib.auth import views as auth_views
from django.urls import path

from webapp.accounts import views
from webapp.accounts.forms import LoginForm

app_name = "accounts"

urlpatterns = [
    path("", views.HomeView.as_view(), name="home"),
    path(
        "login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True, authentication_form=LoginForm),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("lockouts/", views.LockoutListView.as_view(), name="lockout_list"),
    path("lockouts/<int:pk>/unlock/", views.LockoutLiftView.as_view(), name="lockout_lift"),
]
