"""The live console's workers: the code that runs in the worker processes, never in the web
server. "Worker" means these processes and their code; nothing else in the app is called one.

``feed``     ``manage.py live_feed``: claims live sessions and steps each one's grid at its speed,
             with the deployed policy's recommendations
``explain``  the ``explain`` queue's task body (``db_worker --queue-name explain``): an LLM
             explanation of a recommendation (:mod:`webapp.operations.tasks` is its entry point)

The rows these write go through :mod:`webapp.operations.services`.
"""
