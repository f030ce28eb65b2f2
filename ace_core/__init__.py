"""GridACE core: grid environments, the topology action space, discrete SAC, the ACE LLM loop.

Pure Python: nothing here imports Django. The web app talks to it through
:mod:`ace_core.events` (the event sink) and :mod:`ace_core.config`.
"""
