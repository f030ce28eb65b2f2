"""Append-only audit log: who decided what, when, and the state before and after."""
