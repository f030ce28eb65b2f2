"""Writes for training runs (services). Views, admin, tasks, the event sink and the worker call
these; the lifecycle runs, evaluations and mines share (start, heartbeat, finish, fail) is
:mod:`webapp.jobs.services`.

``runs``        launch, cancel, resume (users' decisions, audited); an attempt's start, finish,
                failure and hand-back when its worker stops
``recovery``    stale-job recovery for runs and mines whose worker died
``events``      rows from the trainer's events: metrics, episodes, checkpoints, fine-tunes
``deployment``  deploy a run's policy through the guard (or a checkpoint, without it), roll back
``evaluations`` evaluation of a run against the baselines
``mines``       mines of expert decisions started from the web app (launch, audited; episodes to play)
"""
