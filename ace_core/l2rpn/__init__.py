"""Trained policies in the L2RPN community's format: a folder with ``make_agent(env, path)``.

``export.py`` writes the folder; ``submission/`` is the code copied into it (numpy, torch and
grid2op only: it must never import GridACE).
"""
