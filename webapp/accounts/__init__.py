"""Users and roles: the operator, engineer and reviewer groups, login and logout."""
