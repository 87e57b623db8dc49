"""A webhook POST with retries and backoff that never raises: the run is committed before it.

The URL is a secret (a Slack incoming webhook embeds its token in the path): it is read from the
environment by the caller, and only its ``scheme://host[:port]`` (``target``) is ever logged or
stored; error messages are built here, never copied from the HTTP library with the URL in them.

Attempts: 1 + ``retries``. A connection error, a timeout, HTTP 429 or a 5xx is retried after
``backoff * 2**(attempt - 1)`` seconds; another 4xx is not (the request itself is wrong). The
worst case a run waits for is ``attempts * timeout + backoff * (2**retries - 1)`` seconds
(defaults: 3 * 5 s + 1.5 s).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

DEFAULT_TIMEOUT = 5.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF = 0.5


@dataclass
class Outcome:
    status: str  # sent | failed
    target: str
    attempts: int
    http_status: int | None
    error: str | None
    seconds: float
    sent_at: dt.datetime

    def describe(self) -> str:
        if self.status == "sent":
            return f"notification sent to {self.target} (HTTP {self.http_status}, {self.attempts} attempt(s))"
        return f"notification to {self.target} failed after {self.attempts} attempt(s): {self.error}"


def target_of(url: str) -> str:
    """scheme://host[:port]: what may be shown of a webhook URL."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme or '?'}://{host}{port}"
    except ValueError:
        return "(unparsable URL)"


def check_url(url: str) -> str | None:
    """Why `url` cannot be a webhook URL (one line), or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL"
    return None


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500


def post(
    url: str,
    payload: dict,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    sleep=time.sleep,
) -> Outcome:
    target = target_of(url)
    clock = time.perf_counter()
    started = dt.datetime.now(dt.UTC)
    bad = check_url(url)
    if bad:
        return Outcome("failed", target, 0, None, f"KBAUDIT_NOTIFY_URL {bad}", 0.0, started)
    attempts, status, error = 0, None, None
    with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False) as client:
        for attempt in range(1, retries + 2):
            attempts = attempt
            try:
                response = client.post(url, json=payload, headers={"User-Agent": "kbaudit-notify"})
                status = response.status_code
                if 200 <= status < 300:
                    return Outcome("sent", target, attempts, status, None, time.perf_counter() - clock, started)
                error = f"HTTP {status}"
                if not _retryable(status):
                    break
            except httpx.TimeoutException:
                status, error = None, f"timed out after {timeout:g} s"
            except httpx.TransportError as exc:
                # the library's message can name the URL; keep only the OS-level reason
                reason = str(exc.__cause__ or exc).replace(url, target).splitlines()[0] if str(exc.__cause__ or exc) else ""
                status, error = None, f"{type(exc).__name__}" + (f": {reason}" if reason else "")
            except Exception as exc:  # e.g. httpx.InvalidURL: its message holds the URL; not retried
                status, error = None, f"{type(exc).__name__} (request not sent)"
                break
            if attempt <= retries:
                sleep(backoff * 2 ** (attempt - 1))
    return Outcome("failed", target, attempts, status, error, time.perf_counter() - clock, started)
