"""Live messaging: what the browsers watching a run, a live session or the review queue receive.

``broadcast``         encoding and sending messages to channel groups (from requests and workers)
``relay``             the one websocket consumer shape every live page uses
``run_messages``      the messages a run page receives (and the review queue's refinements)
``session_messages``  the messages a live console receives
"""
