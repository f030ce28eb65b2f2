"""The login form."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import MaxLengthValidator

PASSWORD_MAX_LENGTH = 4096
"""longer passwords are refused before hashing (hashing megabytes costs the server, not the client)"""


class LoginForm(AuthenticationForm):
    """Django's login form, refusing an overlong username or password before authenticating: the
    stock form only sets the inputs' maxlength, so a longer name reached authentication and the
    login throttling's records (which hold 255 characters)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        username = self.fields["username"]
        username.validators.append(MaxLengthValidator(username.max_length))
        self.fields["password"].validators.append(MaxLengthValidator(PASSWORD_MAX_LENGTH))
