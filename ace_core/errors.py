"""Errors a user can act on. Each message says what was wrong and what is accepted."""


class AceError(Exception):
    """Base class: the CLI prints these without a traceback and exits non-zero."""


class ConfigError(AceError, ValueError):
    """A run or evaluation setting is missing, malformed or out of range."""


class UnknownEnvError(ConfigError):
    """The environment name is not bundled with grid2op nor downloaded."""


class CheckpointError(AceError):
    """A checkpoint is missing, corrupt, or belongs to another environment."""


class ActionIndexError(AceError, IndexError):
    """An action index outside 0..N-1."""


class AgentSpecError(ConfigError):
    """An agent spec that names no known agent."""


class ExportError(AceError):
    """An agent export that cannot be written where asked."""
