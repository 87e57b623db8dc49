"""A small client for an OpenAI-compatible Chat Completions endpoint (the deep verifier's tier).

Works with vLLM, Ollama (``/v1``), a llama.cpp server or a hosted API: ``POST {base_url}/chat/completions``
with ``{"model", "messages", "temperature", "max_tokens"}``.

* **Timeouts**: one ``httpx.Timeout`` per request (``timeout`` seconds, connect capped at 10 s),
  and an optional per-run ``deadline`` (``time.monotonic()`` value): no attempt starts after it,
  a request's timeout never runs past it, and a backoff that would end after it is not waited.
* **Retries**: on 429, on 5xx and on transport errors (connection refused, timeouts), with
  exponential backoff (``backoff * 2**attempt``, plus a little jitter, capped at ``max_backoff``);
  a ``Retry-After`` header (seconds or an HTTP date) is honoured, also capped. Other 4xx answers
  fail at once. After ``max_retries`` retries the call raises :class:`LLMError`.
* **Context length**: a 400 (or 413) whose body says the prompt does not fit the model's context
  window (llama.cpp, vLLM, OpenAI and Ollama word it differently) raises ``LLMError`` with kind
  ``context_length``, so the caller can shrink the prompt (:mod:`kb.escalate.cove` does, once).
* **Concurrency**: at most ``concurrency`` requests in flight from one client, whatever the
  number of threads using it (a semaphore); the client is thread-safe.
* **Cost accounting**: :class:`Cost` counts completed calls, HTTP attempts, retries (and how many
  answers were 429 or 5xx), failures, tokens in and out (the reply's ``usage``, else an estimate
  of 4 characters a token) and the seconds spent in requests.
* **Secrets**: the API key goes only into the ``Authorization`` header. It is not part of the
  client's ``repr``, of any log line, of any exception message or of :class:`Cost`.

Prefect-free.
"""

from __future__ import annotations

import dataclasses
import email.utils
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kb.errors import LLMError
from kb.log import logger

if TYPE_CHECKING:
    import httpx


@dataclass
class Cost:
    calls: int = 0  # completed chat completions
    attempts: int = 0  # HTTP requests sent (retries included)
    retries: int = 0
    failures: int = 0  # calls that raised LLMError
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0  # time spent in requests (summed over threads)
    rate_limited: int = 0  # 429 answers (each retried while retries last)
    server_errors: int = 0  # 5xx answers
    transport_errors: int = 0  # connection errors and request timeouts
    truncated_retries: int = 0  # replies cut at max_tokens, asked again with a larger max_tokens
    context_retries: int = 0  # prompts over the context window, asked again with less evidence

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def add(self, other: Cost) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["seconds"] = round(self.seconds, 3)
        return out


@dataclass(frozen=True)
class ChatReply:
    text: str
    tokens_in: int
    tokens_out: int
    finish_reason: str | None  # "length": the reply was cut at max_tokens (truncated)
    seconds: float


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token) for budgets and for replies without usage."""
    return max(1, len(text) // 4)


# How llama.cpp ("exceed context window"), vLLM ("maximum context length"), OpenAI
# ("context_length_exceeded") and others word a prompt that does not fit.
_CONTEXT_ERROR = re.compile(
    r"context[ _-]?(?:length|window|size)|maximum context|n_ctx|too many tokens|prompt is too long|"
    r"exceeds? the (?:model'?s )?(?:context|maximum)",
    re.IGNORECASE,
)


def is_context_error(status: int, body: str) -> bool:
    return status in (400, 413, 422) and bool(_CONTEXT_ERROR.search(body or ""))


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class LLMClient:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    max_retries: int = 3
    backoff: float = 1.0
    max_backoff: float = 30.0
    concurrency: int = 4
    max_tokens: int = 800
    temperature: float = 0.0
    deadline: float | None = None  # time.monotonic() after which no request starts (per-run limit)

    def __post_init__(self):
        import httpx  # imported by the client only: most audits never escalate, and httpx costs every run 50 ms

        self.cost = Cost()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max(1, self.concurrency))
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
            limits=httpx.Limits(max_connections=max(1, self.concurrency)),
            follow_redirects=False,
        )

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------------------
    def _account(self, **deltas) -> None:
        with self._lock:
            for name, value in deltas.items():
                setattr(self.cost, name, getattr(self.cost, name) + value)

    def _sleep_for(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff)
        delay = self.backoff * (2**attempt)
        return min(delay + random.uniform(0, delay / 4), self.max_backoff)

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def chat(self, messages: list[dict], max_tokens: int | None = None) -> ChatReply:
        """One chat completion, with retries. Raises LLMError."""
        import httpx

        body = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": max_tokens or self.max_tokens,
            "stream": False,
        }
        last: LLMError | None = None
        for attempt in range(self.max_retries + 1):
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                last = LLMError("the run's time limit for the deep verifier is spent", kind="timeout")
                break
            if attempt:
                self._account(retries=1)
            timeout = self.timeout if remaining is None else max(0.05, min(self.timeout, remaining))
            started = time.perf_counter()
            retry_after = None
            with self._slots:
                try:
                    response = self._http.post(self.url, json=body, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))
                except httpx.TimeoutException as exc:
                    last = LLMError(f"timed out after {timeout:g} s ({type(exc).__name__})", kind="timeout")
                    response = None
                except httpx.HTTPError as exc:
                    last = LLMError(f"request failed: {type(exc).__name__}", kind="error")
                    response = None
                finally:
                    elapsed = time.perf_counter() - started
                    self._account(attempts=1, seconds=elapsed)
            if response is None:
                self._account(transport_errors=1)
            else:
                if response.status_code == 200:
                    return self._reply(response, body, elapsed)
                status = response.status_code
                if is_context_error(status, response.text[:4000]):
                    last = LLMError(
                        f"HTTP {status}: the prompt does not fit the model's context window", status=status, kind="context_length"
                    )
                    break
                last = LLMError(f"HTTP {status} from the endpoint", status=status, kind="http")
                if status == 429:
                    self._account(rate_limited=1)
                elif status >= 500:
                    self._account(server_errors=1)
                else:
                    break  # 400, 401, 404...: retrying will not help
                retry_after = _retry_after(response.headers.get("Retry-After"))
            if attempt < self.max_retries:
                delay = self._sleep_for(attempt, retry_after)
                remaining = self._remaining()
                if remaining is not None and delay >= remaining:
                    assert last is not None  # every attempt that gets here recorded why it failed
                    last = LLMError(f"{last}; no time left in the run to retry", status=last.status, kind=last.kind)
                    break
                logger.debug("deep verifier: %s; retry %d in %.2f s", last, attempt + 1, delay)
                time.sleep(delay)
        self._account(failures=1)
        assert last is not None
        raise last

    def _reply(self, response: httpx.Response, body: dict, elapsed: float) -> ChatReply:
        try:
            data = response.json()
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            self._account(failures=1)
            raise LLMError("the endpoint's answer is not a chat completion", kind="malformed") from None
        usage = data.get("usage") or {}
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body["messages"])
        tokens_in = int(usage.get("prompt_tokens") or estimate_tokens("x" * prompt_chars))
        tokens_out = int(usage.get("completion_tokens") or estimate_tokens(text))
        self._account(calls=1, tokens_in=tokens_in, tokens_out=tokens_out)
        return ChatReply(text, tokens_in, tokens_out, choice.get("finish_reason"), elapsed)
