"""The lifecycle every background job of the web app shares (not an app: no tables of its own).

``models``    :class:`~webapp.jobs.models.JobStatus`, and the abstract rows the apps' jobs inherit:
              :class:`~webapp.jobs.models.Claimed` (a worker owns it and stamps its heartbeat) and
              :class:`~webapp.jobs.models.Job` (queued -> running -> succeeded | cancelled | failed)
``services``  the writes a worker makes on any job: start (claim), heartbeat, finish, fail; and the
              silent jobs the watchdog recovers
``recovery``  how each kind of job is recovered when its worker falls silent: a registry the apps
              fill in their ``AppConfig.ready()``, which ``manage.py watchdog`` walks
``errors``    what a recovered job's task records (:class:`~webapp.jobs.errors.WorkerLost`)

A *worker* is the process that runs jobs (``db_worker``, ``live_feed``); the code it runs lives in
each app's ``worker/`` package and records what happens through these services.
"""
