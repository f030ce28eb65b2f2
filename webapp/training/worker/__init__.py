"""The training worker's runtime: what runs inside ``db_worker`` for the ``training`` queue's
tasks (:mod:`webapp.training.tasks` are only their entry points). "Worker" means this process and
its code; nothing else in the app is called one.

``attempt``     one attempt of a run: claim it, train with the sink, record how it ended
``evaluation``  a finished run's policy and the baselines on the same episodes
``mining``      a mine of expert decisions (Ray on this machine, one Ray worker)
``heartbeat``   the thread that keeps a run's or mine's claim fresh and carries cancels and losses back
``sink``        the event sink the trainer reports to (rows, then live messages)

The rows these write go through :mod:`webapp.jobs.services` (start, heartbeat, finish, fail of
any job) and :mod:`webapp.training.services` (``runs``, ``events``, ``mines``); live messages
through :mod:`webapp.live.broadcast`'s background publisher.
"""
