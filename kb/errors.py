"""The one error hierarchy. The exit status of a command follows from the type it raises:

- `UsageError` (and `ConfigError`): a bad flag, setting or argument, exit 2;
- `RunError` (and `StoreError`, `StoreLocked`, `StoreDamaged`, the remote store's errors): the
  run or the store failed, exit 3.

Every message is one line, fit for ``kbaudit: error: <message>`` and for an ``ingest_errors`` row.
Errors about one input (a document that does not parse, a document with too many claims) are
`InputError`s: the batch records them and goes on, they never end a command.
"""

from __future__ import annotations


class KbauditError(Exception):
    """Base of every error kbaudit raises on purpose."""

    exit_code = 3


class UsageError(KbauditError, ValueError):
    """A usage or configuration error: the CLI prints it on one line and exits 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A setting (file, environment or flag) that is unknown or has a bad value."""


class RunError(KbauditError, RuntimeError):
    """The run itself failed: exit 3."""

    exit_code = 3


class StoreError(RunError):
    """The store cannot be read or written."""


class StoreLocked(StoreError):
    """Another kbaudit process is writing to the store."""


class StoreDamaged(StoreError):
    """A file of the store is unreadable; nothing more is written until it is dealt with."""


class RemoteError(StoreError):
    """Pulling from or pushing to the remote store failed (network, permissions, bucket)."""


class RemoteLocked(StoreLocked):
    """Another writer holds the remote store's lease."""


class InputError(KbauditError, ValueError):
    """One input cannot be used (it becomes an ``ingest_errors`` row; the batch goes on)."""


class ParseError(InputError):
    """A document that cannot be parsed; the message is one line, fit for ``ingest_errors``."""


class ClaimLimitError(InputError):
    """A document yields more claims than ``ClaimSettings.max_claims_per_doc``."""


class LLMError(RunError):
    """The endpoint could not give an answer (after retries, or a non-retryable status).

    Caught by the escalation stage, which keeps the cheaper verdict and counts the reason."""

    def __init__(self, message: str, status: int | None = None, kind: str = "error"):
        super().__init__(message)
        self.status = status
        self.kind = kind  # error | timeout | http | malformed | context_length
