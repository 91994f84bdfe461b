"""The LLM client's retry policy: each failure classified, logged and, where it can pass, retried.

- transient (connection refused or reset, no chunk within `llm.timeout`, a stream broken off,
  HTTP 408/409/429/5xx): retried with backoff, or after the server's `Retry-After` (honoured
  beyond the SDK's own 60 s, within `llm.retry_after_cap_seconds`); a call that timed out is
  sent again at most once, since a server too slow for one try is too slow for five;
- a body that is not a chat completion: retried too (proxies and half-started servers answer
  so briefly), then "LLM returned garbage";
- 401/403, an unknown model, other 4xx: `LLMError` at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import openai

from akira_cli.backoff import backoff
from akira_cli.events import EventType
from akira_cli.llm import stream, wire
from akira_cli.llm.types import Failure, FormatRejected, LLMError, LLMTransientError, Redactor
from akira_cli.sections import LLMSettings
from akira_cli.transient import is_transient_status
from akira_cli.words import counted

R = TypeVar("R")

BACKOFF_BASE = 1.0
"""The first retry waits 0.5-1 s, the next 1-2 s, and so on up to `BACKOFF_CAP`."""
BACKOFF_CAP = 30.0


class Retrying:
    """The retry side of `LLMClient` (which provides what is declared here)."""

    settings: LLMSettings
    base_url: str
    _redact: Redactor
    _sleep: Callable[[float], None]

    def _throttle(self) -> None:
        raise NotImplementedError

    def _emit(self, type: EventType, **data: Any) -> None:
        raise NotImplementedError

    def _list_models(self) -> list[str]:
        raise NotImplementedError

    _model: str | None

    def _call(
        self,
        request: Callable[[], R],
        purpose: str,
        *,
        retry_refused: bool = True,
        format_probe: bool = False,
    ) -> R:
        """Runs `request` with our retry policy. With `format_probe` (the request carries a
        `response_format`), an HTTP 400/422/500 is taken as the server refusing that format
        (llama.cpp servers answer 500), and falls back at once instead of being retried."""
        attempt = timeouts = 0
        while True:
            self._throttle()
            try:
                return request()
            except openai.APIStatusError as exc:
                if format_probe and exc.status_code in (400, 422, 500):
                    detail = self._redact(wire.server_message(exc), 160)
                    raise FormatRejected(
                        f"LLM endpoint refused response_format (HTTP {exc.status_code}: {detail})"
                    ) from None
                failure = self._classify(exc)
            except (openai.OpenAIError, ValueError, wire.Garbage, AttributeError, TypeError) as exc:
                failure = self._classify(exc)
            except Exception as exc:  # the HTTP library's own, raised while a stream is read
                kind = stream.transport_error(exc)
                if kind is None:
                    raise
                failure = self._timed_out() if kind == "timeout" else self._broken_off(exc)
            timeouts += failure.timeout
            if (
                attempt >= self.settings.max_retries
                or (failure.refused and not retry_refused)
                or (failure.timeout and timeouts > 1)  # sent again at most once: it may be too slow
            ):
                raise self._final(failure, attempt + 1)
            attempt += 1
            self._wait_before_retry(failure, attempt, purpose)

    def _wait_before_retry(self, failure: Failure, attempt: int, purpose: str) -> None:
        if failure.retry_after is not None:
            wait = min(failure.retry_after, self.settings.retry_after_cap_seconds)
            mechanism = "retry_after"
        else:
            wait = backoff(attempt - 1, base=BACKOFF_BASE, cap=BACKOFF_CAP)
            mechanism = "backoff"
        self._emit(
            EventType.TRANSIENT_RETRY,
            mechanism=mechanism,
            status=failure.status,
            wait_seconds=round(wait, 3),
            attempt=attempt,
            purpose=purpose,
            error=failure.message,
        )
        self._sleep(wait)

    def _final(self, failure: Failure, attempts: int) -> LLMError:
        tries = f"after {counted(attempts, 'attempt')}"
        if failure.garbage:
            return LLMError(
                f"LLM returned garbage (not a JSON chat completion) from {self.base_url} {tries}; "
                "check that llm.base_url points at an OpenAI-compatible API"
            )
        return LLMTransientError(f"{failure.message} ({tries})")

    def _classify(self, exc: Exception) -> Failure:
        """A retryable `Failure`, or raises the permanent `LLMError` for `exc`."""
        if isinstance(exc, openai.APITimeoutError):
            return self._timed_out()
        if isinstance(exc, openai.APIConnectionError):
            reason = wire.connection_reason(exc)
            return Failure(
                f"LLM endpoint {self.base_url} is unreachable ({self._redact(reason, 120)}); "
                "start the server or fix llm.base_url",
                refused="refused" in reason,
            )
        if isinstance(exc, openai.APIStatusError):
            return self._classify_status(exc)
        return Failure(f"LLM returned garbage from {self.base_url}", garbage=True)

    def _timed_out(self) -> Failure:
        return Failure(
            f"LLM endpoint {self.base_url} sent nothing for {self.settings.timeout:g}s "
            "(llm.timeout, the longest wait for the next part of a reply); raise it or check the server",
            timeout=True,
        )

    def _broken_off(self, exc: Exception) -> Failure:
        reason = self._redact(str(exc) or type(exc).__name__, 120)
        return Failure(f"LLM endpoint {self.base_url} broke off its reply ({reason})")

    def _classify_status(self, exc: openai.APIStatusError) -> Failure:
        status = exc.status_code
        detail = self._redact(wire.server_message(exc), 200)
        if is_transient_status(status):
            return Failure(
                f"LLM endpoint {self.base_url} answered HTTP {status} ({detail})",
                status=status,
                retry_after=wire.retry_after(exc.response.headers),
            )
        if status in (401, 403):
            raise LLMError(
                f"LLM rejected the API key ({status}); set OPENAI_API_KEY or llm.api_key"
            ) from None
        if status == 404 and wire.is_chat(exc) and (exc.code == "model_not_found" or "model" in detail):
            raise LLMError(self._model_not_found()) from None
        if status in (400, 422) and ("response_format" in detail or "json_schema" in detail):
            raise FormatRejected(f"LLM endpoint refused response_format: {detail}") from None
        hint = "; check llm.base_url (it usually ends in /v1)" if status == 404 else ""
        raise LLMError(
            f"LLM endpoint {self.base_url} refused the request (HTTP {status}): {detail}{hint}"
        ) from None

    def _model_not_found(self, listed: list[str] | None = None) -> str:
        try:
            models = listed if listed is not None else self._list_models()
            available = ", ".join(models) or "(none listed)"
        except LLMError:
            available = "(could not list them)"
        return (
            f"LLM model '{self._model}' not found at {self.base_url}; "
            f"set llm.model or AKIRA_MODEL to one of: {available}"
        )
