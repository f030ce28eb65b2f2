"""Engineers' forms for training (checked input for views, the admin and the HTTP API). Callers
import from the module that holds a form; this package holds nothing itself.

``launch``         the launch form (a run's TrainConfig, from a named recipe) and the recipes offered
``launch_fields``  its fields, one per TrainConfig field, and the groups the page shows them in
``server_paths``   settings naming a file or folder on the server, confined to where they may point
``mines``          the mine form: a mine of expert decisions on the train days
``evaluations``    the run page's Evaluate form
``deployments``    the deploy confirmation and the rollback
``compare``        the comparison page's runs

The runs list's filters and a run's tags and note are :mod:`webapp.training.run_forms`.
"""
