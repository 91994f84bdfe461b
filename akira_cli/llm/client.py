"""The one client everything that talks to a model uses.

It wraps `openai.OpenAI` with the SDK's own retries switched off, because we retry ourselves: so
that each failure is classified, logged as an event, and a long `Retry-After` is honoured (the SDK
gives up on waits beyond 60 s). It also enforces the client-side rate limit and the budgets, adds
up token usage and cost, and turns structured output that breaks its schema into a repair retry.

Failure classes:
- transient (connection refused or reset, client timeout, HTTP 408/409/429/5xx): retried with
  backoff, or with the server's `Retry-After`; after the last retry, `LLMTransientError`;
- a body that is not JSON (or not a chat completion): also retried, since proxies and
  half-started servers produce it briefly; if it persists the endpoint is not an OpenAI API, so
  it ends as a plain `LLMError` ("LLM returned garbage"), a problem a person must fix;
- 401/403, an unknown model, other 4xx: `LLMError` at once.

The API key never appears in an exception message, an event or a repr: every text taken from
the SDK or the server is passed through `Redactor`, and SDK exceptions are not chained.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

import openai
from pydantic import BaseModel, ValidationError

from akira_cli.config import BudgetSettings, LLMSettings, ResourceLimits
from akira_cli.errors import BudgetExceeded
from akira_cli.events import EventBus, EventType
from akira_cli.llm import wire
from akira_cli.llm.types import (
    NO_KEY,
    ChatResult,
    Failure,
    FormatRejected,
    LLMError,
    LLMSchemaError,
    LLMTransientError,
    LLMTruncated,
    Redactor,
)
from akira_cli.usage import Usage

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0
RATE_WINDOW = 60.0
TRANSIENT_STATUSES = frozenset({408, 409, 429})
FORMAT_MODES = ("json_schema", "json_object", "none")
PURPOSE_TOKENS = {"judge": 512, "reflection": 1024, "reasoning.profile": 1024, "lesson": 512}
"""Replies that are small by nature get a smaller bound than `llm.max_tokens`."""


class LLMClient:
    def __init__(
        self,
        settings: LLMSettings,
        *,
        limits: ResourceLimits | None = None,
        budget: BudgetSettings | None = None,
        bus: EventBus | None = None,
        usage: Usage | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not settings.base_url:
            raise LLMError(
                "no LLM endpoint configured; set llm.base_url or OPENAI_BASE_URL "
                "(e.g. http://127.0.0.1:11434/v1)"
            )
        self.settings = settings
        self.base_url = settings.base_url
        self.limits = limits
        self.budget = budget
        self.bus = bus
        self.usage = usage if usage is not None else Usage()
        self._sleep = sleep
        key = settings.api_key.get_secret_value() if settings.api_key else ""
        self._redact = Redactor(key)
        self._sdk = openai.OpenAI(
            base_url=settings.base_url,
            api_key=key or NO_KEY,
            timeout=settings.timeout,
            max_retries=0,
        )
        self._model = settings.model
        self._format_mode = 0
        self._lock = threading.Lock()
        self._calls: deque[float] = deque()

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.base_url!r}, model={self._model!r})"

    # -- public API ---------------------------------------------------------------------------

    @property
    def model(self) -> str:
        """`llm.model`, else the first model the server lists (asked once)."""
        if self._model is None:
            models = self._list_models()
            if not models:
                raise LLMError(f"LLM endpoint {self.base_url} lists no models; set llm.model or AKIRA_MODEL")
            self._model = models[0]
        return self._model

    def ping(self, *, retry: bool = False) -> None:
        """Checks the endpoint, the key and a configured `llm.model` with one GET /models.

        A refused connection fails at once, unless `retry` (a loop that runs for hours backs
        off first: a local server may be restarting). A server that lists no models at all is
        given the benefit of the doubt (some proxies list nothing yet serve every model)."""
        page = self._call(lambda: self._sdk.models.list(), "ping", retry_refused=retry)
        available = wire.model_ids(page)
        if self._model is not None and available and self._model not in available:
            raise LLMError(self._model_not_found(available))

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        purpose: str = "",
    ) -> ChatResult:
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        return self._complete(messages, extra, purpose)

    def structured(
        self,
        messages: list[dict[str, Any]],
        schema: type[T],
        *,
        purpose: str = "",
        repair_attempts: int = 2,
    ) -> T:
        """A reply parsed into `schema`; a reply that breaks it goes back to the model with the
        validation error, at most `repair_attempts` times. Nothing is ever guessed."""
        conversation = wire.with_schema_prompt(messages, schema)
        problem = ""
        for _ in range(repair_attempts + 1):
            result = self._structured_once(conversation, schema, purpose)
            content = result.content or ""
            try:
                return schema.model_validate_json(wire.strip_fences(content))
            except ValidationError as exc:
                problem = wire.describe(exc)
            conversation += [
                {"role": "assistant", "content": content},
                {
                    "role": "user",
                    "content": f"Your reply did not match the schema: {problem}. "
                    "Reply again with only valid JSON.",
                },
            ]
        raise LLMSchemaError(
            f"LLM output for {purpose or schema.__name__} broke the {schema.__name__} schema "
            f"after {repair_attempts} repair(s): {self._redact(problem, 200)}"
        )

    # -- one completion -----------------------------------------------------------------------

    def _structured_once(
        self, conversation: list[dict[str, Any]], schema: type[BaseModel], purpose: str
    ) -> ChatResult:
        while True:
            mode = FORMAT_MODES[self._format_mode]
            try:
                return self._complete(conversation, wire.response_format(mode, schema), purpose)
            except FormatRejected as exc:
                if self._format_mode + 1 >= len(FORMAT_MODES):
                    raise
                self._format_mode += 1
                self._emit(
                    EventType.WARNING,
                    message=f"{exc}; structured output falls back to "
                    f"{FORMAT_MODES[self._format_mode]} for the rest of the run",
                )

    def _complete(self, messages: list[dict[str, Any]], extra: dict[str, Any], purpose: str) -> ChatResult:
        self._check_budget()
        model = self.model
        started = time.monotonic()
        limit = min(self.settings.max_tokens, PURPOSE_TOKENS.get(purpose, self.settings.max_tokens))
        result = self._call(
            lambda: wire.parse_completion(
                self._sdk.chat.completions.create(
                    model=model,
                    messages=messages,  # type: ignore[arg-type]
                    temperature=self.settings.temperature,
                    max_tokens=limit,
                    **extra,
                )
            ),
            purpose,
            format_probe="response_format" in extra and extra["response_format"].get("type") != "text",
        )
        result.usage.cost_usd = self._cost(model, result.usage)
        with self._lock:
            self.usage.add(result.usage)
        self._emit(
            EventType.LLM_CALL,
            purpose=purpose,
            model=model,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            cost_usd=round(result.usage.cost_usd, 6),
            duration_seconds=round(time.monotonic() - started, 3),
        )
        if result.finish_reason == "length":
            raise LLMTruncated(
                f"the LLM reply{f' for {purpose}' if purpose else ''} was cut at max_tokens ({limit}); "
                "the model may be looping: raise llm.max_tokens or use a larger model"
            )
        return result

    def _cost(self, model: str, usage: Usage) -> float:
        price = self.settings.prices.get(model)
        if price is None:
            return 0.0
        return price.cost(usage.prompt_tokens, usage.completion_tokens)

    def _check_budget(self) -> None:
        budget, used = self.budget, self.usage
        if budget is None:
            return
        if budget.max_tokens_total is not None and used.total_tokens >= budget.max_tokens_total:
            raise BudgetExceeded(
                f"token budget of {budget.max_tokens_total} used up ({used.total_tokens} tokens); "
                "raise budget.max_tokens_total or resume later"
            )
        if budget.max_cost_usd is not None and used.cost_usd >= budget.max_cost_usd:
            raise BudgetExceeded(
                f"cost budget of ${budget.max_cost_usd:g} used up (${used.cost_usd:.4f}); "
                "raise budget.max_cost_usd or resume later"
            )

    def _list_models(self) -> list[str]:
        return wire.model_ids(self._call(lambda: self._sdk.models.list(), "models"))

    # -- retries ------------------------------------------------------------------------------

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
        attempt = 0
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
            if attempt >= self.settings.max_retries or (failure.refused and not retry_refused):
                raise self._final(failure, attempt + 1)
            attempt += 1
            self._wait_before_retry(failure, attempt, purpose)

    def _wait_before_retry(self, failure: Failure, attempt: int, purpose: str) -> None:
        if failure.retry_after is not None:
            wait = min(failure.retry_after, self.settings.retry_after_cap_seconds)
            mechanism = "retry_after"
        else:
            delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1))
            wait = min(BACKOFF_CAP, delay * random.uniform(1.0, 1.25))
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
        tries = f"after {attempts} attempt(s)"
        if failure.garbage:
            return LLMError(
                f"LLM returned garbage (not a JSON chat completion) from {self.base_url} {tries}; "
                "check that llm.base_url points at an OpenAI-compatible API"
            )
        return LLMTransientError(f"{failure.message} ({tries})")

    def _classify(self, exc: Exception) -> Failure:
        """A retryable `Failure`, or raises the permanent `LLMError` for `exc`."""
        if isinstance(exc, openai.APITimeoutError):
            return Failure(
                f"LLM endpoint {self.base_url} did not answer within {self.settings.timeout:g}s; "
                "raise llm.timeout or check the server"
            )
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

    def _classify_status(self, exc: openai.APIStatusError) -> Failure:
        status = exc.status_code
        detail = self._redact(wire.server_message(exc), 200)
        if status in TRANSIENT_STATUSES or status >= 500:
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

    # -- rate limit and events ----------------------------------------------------------------

    def _throttle(self) -> None:
        """Client-side `max_api_calls_per_minute` over a sliding window.

        When the window is full the call reserves the moment the oldest call leaves it and
        sleeps until then, so concurrent callers queue up fairly and an injected sleep that
        does not really wait cannot make this spin."""
        limit = self.limits.max_api_calls_per_minute if self.limits else 0
        if limit <= 0:
            return
        with self._lock:
            now = time.monotonic()
            while self._calls and self._calls[0] <= now - RATE_WINDOW:
                self._calls.popleft()
            slot = now
            if len(self._calls) >= limit:
                slot = self._calls.popleft() + RATE_WINDOW
            self._calls.append(slot)
        if slot > now:
            self._sleep(slot - now)

    def _emit(self, type: EventType, **data: Any) -> None:
        if self.bus is not None:
            self.bus.emit(type, **data)
