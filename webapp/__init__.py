"""GridACE's web application: training runs for engineers, refinement review for reviewers.

The Django project (settings, urls, asgi) lives here; each domain is an app below it
(``accounts``, ``training``, ``review``, ``audit``). It drives :mod:`ace_core` through the
event sink and never the other way round.
"""
