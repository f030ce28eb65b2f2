"""GridACE core: grid environments, the topology action space, discrete SAC, the ACE LLM loop.

Pure Python: nothing here imports Django. The web app talks to it through
:mod:`ace_core.events` (the event sink) and :mod:`ace_core.config`. Importing it pins torch's CPU
kernels (:mod:`ace_core.kernels`), so that runs are the same on every x86 machine.
"""

from ace_core.kernels import pin_cpu_kernels

pin_cpu_kernels()
