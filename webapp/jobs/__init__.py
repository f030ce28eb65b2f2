"""The lifecycle every background job of the web app shares (not an app: no tables of its own).

``models``    :class:`~webapp.jobs.models.JobStatus`, and the abstract rows the apps' jobs inherit:
              :class:`~webapp.jobs.models.Claimed` (a worker owns it and stamps its heartbeat) and
              :class:`~webapp.jobs.models.Job` (queued -> running -> succeeded | cancelled | failed)
``services``  the writes a worker makes on any job: start (claim), heartbeat, finish, fail; and the
              silent jobs the watchdog recovers

A *worker* is the process that runs jobs (``db_worker``, ``live_feed``); the code it runs lives in
each app's ``worker/`` package and records what happens through these services.
"""
