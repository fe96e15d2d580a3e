"""What a call to a model can raise. Every message says what to change or try next."""

from __future__ import annotations


class LLMError(Exception):
    """The base of every error this package raises."""

    def __init__(self, message: str, *, provider: str | None = None, status: int | None = None):
        super().__init__(message)
        self.provider = provider
        self.status = status


class LLMNotConfigured(LLMError):
    """No provider, model or API key: nothing was sent."""


class LLMUnavailable(LLMError):
    """Rate limits, server errors, timeouts or lost connections outlasted the retries."""

    def __init__(self, message: str, *, provider: str, status: int | None, attempts: int) -> None:
        super().__init__(message, provider=provider, status=status)
        self.attempts = attempts


class LLMAuthError(LLMError):
    """The provider refused the key (401) or its permissions (403); not retried."""


class LLMRequestError(LLMError):
    """The provider rejected the request itself (400, 404, 413, 422 …); not retried."""
