"""The exceptions of ppb, raised with the ppb command's messages."""


class Error(Exception):
    """Base class of every ppb error."""


class InvalidInput(Error, ValueError):
    """The caller's data are wrong: a malformed or contradictory file, an argument out of range,
    a placement the fitted observations do not determine (the ppb command's exit status 2).
    ``field`` is the keyword argument at fault when one is (``"weight_grad_share"``), else None."""

    def __init__(self, message, field=None):
        super().__init__(message)
        self.field = field


class PluginError(Error, RuntimeError):
    """No usable plugin matches the request, or the plugin failed to load or failed while running
    (the ppb command's exit status 3)."""


class Infeasible(Error):
    """No partition fits the memory limit (the ppb command's exit status 4). The message names the
    tightest constraint in numbers; ``smallest_feasible_limit_mb`` is the smallest
    ``memory_limit_mb`` (margin included) at which a plan exists, or None when none would do."""

    def __init__(self, message, smallest_feasible_limit_mb=None):
        super().__init__(message)
        self.smallest_feasible_limit_mb = smallest_feasible_limit_mb
