"""The one client everything that talks to a model uses.

It wraps `openai.OpenAI` with the SDK's own retries switched off, because we retry ourselves
(`llm.retries`: each failure classified and logged, a long `Retry-After` honoured, a timed-out
call sent again at most once). It streams every call (`llm.stream`), enforces the client-side
rate limit and the budgets, adds up token usage and cost, mends what it can of a structured
reply (`llm.mend`) and turns what it cannot into a repair retry.

The API key never appears in an exception message, an event or a repr: every text taken from
the SDK or the server is passed through `Redactor`, and SDK exceptions are not chained.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

import openai
from pydantic import BaseModel, ValidationError

from akira_cli.events import EventBus, EventType
from akira_cli.llm import stream, wire
from akira_cli.llm.mend import mend
from akira_cli.llm.retries import Retrying
from akira_cli.llm.types import (
    NO_KEY,
    ChatResult,
    FormatRejected,
    LLMError,
    LLMSchemaError,
    LLMTruncated,
    Redactor,
)
from akira_cli.sections import BudgetSettings, LLMSettings, ResourceLimits
from akira_cli.usage import Usage, check_budget
from akira_cli.words import counted

T = TypeVar("T", bound=BaseModel)
RATE_WINDOW = 60.0
FORMAT_MODES = ("json_schema", "json_object", "none")
STREAM_WORD = re.compile(r"\bstream(ing|_options)?\b", re.IGNORECASE)
"""How a server that refuses streaming names it in its 4xx message ("upstream" is not it)."""
PURPOSE_TOKENS = {
    "judge": 512,
    "reflection": 1024,
    "lesson": 512,
    "reasoning.profile": 512,
    "reasoning.profile_update": 512,
    "reasoning.converge": 768,
    "reasoning.validate": 1024,
    "reasoning.plan": 2048,
    "reasoning.refine": 2048,
    "reasoning.synthesize": 2048,
}
"""Replies that are small by nature get a smaller bound than `llm.max_tokens` (a purpose is
matched by its first two parts: `reasoning.validate.plan` by `reasoning.validate`), so that a
small model that loops is cut early."""


class LLMClient(Retrying):
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
        self._streaming = True
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
            reply, problem = self._read_reply(content, schema, purpose)
            if reply is not None:
                return reply
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
            f"after {counted(repair_attempts, 'repair')}: {self._redact(problem, 200)}"
        )

    def _read_reply(self, content: str, schema: type[T], purpose: str) -> tuple[T | None, str]:
        """The reply parsed into `schema`, after the host mended what it can (see `llm.mend`);
        or None and what is still wrong, for the model to repair."""
        text = wire.strip_fences(content)
        try:
            data = json.loads(text)
        except ValueError:
            try:
                return schema.model_validate_json(text), ""
            except ValidationError as exc:
                return None, wire.describe(exc)
        mended, notes = mend(data, schema)
        try:
            reply = schema.model_validate(mended)
        except ValidationError as exc:
            return None, wire.describe(exc)
        if notes:
            label = purpose or schema.__name__
            self._emit(EventType.WARNING, message=f"mended the {label} reply: {'; '.join(notes)}"[:600])
        return reply, ""

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
        if self.budget is not None:
            check_budget(self.budget, self.usage)
        model = self.model
        started = time.monotonic()
        bound = PURPOSE_TOKENS.get(".".join(purpose.split(".")[:2]), self.settings.max_tokens)
        limit = min(self.settings.max_tokens, bound)
        request = {
            "model": model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "max_tokens": limit,
            **extra,
        }
        result = self._call(
            lambda: self._request(request),
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
            streamed=self._streaming,
            **({"usage_estimated": True} if result.usage.estimated_calls else {}),
        )
        if result.finish_reason == "length":
            raise LLMTruncated(
                f"the LLM reply{f' for {purpose}' if purpose else ''} was cut at max_tokens ({limit}); "
                "the model may be looping: raise llm.max_tokens or use a larger model"
            )
        return result

    def _request(self, request: dict[str, Any]) -> ChatResult:
        """One completion, streamed unless the server refused it (see `llm.stream`)."""
        create: Any = self._sdk.chat.completions.create
        if not self._streaming:
            return wire.parse_completion(create(**request))
        try:
            chunks = create(**request, stream=True, stream_options={"include_usage": True})
        except openai.APIStatusError as exc:
            if exc.status_code in (400, 422, 501) and STREAM_WORD.search(wire.server_message(exc)):
                self._stop_streaming(f"HTTP {exc.status_code}: {self._redact(wire.server_message(exc), 120)}")
                return wire.parse_completion(create(**request))
            raise
        try:
            return stream.gather(chunks, request["messages"])
        except stream.NotStreamed as whole:
            self._stop_streaming("it answered with a whole reply")
            return whole.completion
        finally:
            chunks.close()  # given up or done: the connection goes, and the server stops generating

    def _stop_streaming(self, why: str) -> None:
        self._streaming = False
        self._emit(
            EventType.WARNING,
            message=f"LLM endpoint {self.base_url} does not stream ({why}); "
            "its replies are read whole for the rest of the run",
        )

    def _cost(self, model: str, usage: Usage) -> float:
        price = self.settings.prices.get(model)
        if price is None:
            return 0.0
        return price.cost(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)

    def _list_models(self) -> list[str]:
        return wire.model_ids(self._call(lambda: self._sdk.models.list(), "models"))

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
