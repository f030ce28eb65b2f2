"""The training worker's runtime: what runs inside ``db_worker`` while a run trains.

``heartbeat``  the thread that keeps the run's claim fresh and carries cancel requests back
``sink``       the event sink the trainer reports to (rows, then live messages)
"""
