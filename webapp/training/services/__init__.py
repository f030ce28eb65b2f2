"""Writes for training runs (services). Views, admin, tasks and the event sink call these.

``runs``        launch, cancel, resume (users' decisions, audited)
``worker``      what a worker does to a run: claim it, heartbeat, finish or fail it
``recovery``    stale-run recovery for runs whose worker died
``events``      rows from the trainer's events: metrics, episodes, checkpoints, fine-tunes
``deployment``  mark a checkpoint as the deployed policy
``evaluations`` evaluation of a run against the baselines
``mines``       mines of expert decisions started from the web app (launch, audited; worker records)
"""
