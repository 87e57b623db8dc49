"""Store URLs: a folder, a ``file://`` URL, or a remote (fsspec) URL worked on in a local mirror;
and the per-machine cache folder that mirrors live in."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import fsspec
from fsspec.registry import known_implementations

from kb.errors import ConfigError

LOCAL_SCHEMES = ("file", "local")
# The pip package of common fsspec backends; others are named after the module of their class.
PACKAGES = {"s3": "kbaudit[s3] (s3fs)", "s3a": "kbaudit[s3] (s3fs)"}


def is_url(value) -> bool:
    return isinstance(value, str) and "://" in value


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower()


def local_path(url: str) -> Path | None:
    """The folder of a plain path or ``file://`` URL; None for a remote URL."""
    if not is_url(url):
        return Path(url)
    if scheme_of(url) in LOCAL_SCHEMES:
        return Path(url.split("://", 1)[1])
    return None


def check_url(url: str, name: str = "out") -> str:
    """A remote store URL with an installed fsspec backend, else a ConfigError saying what to do."""
    url = url.strip().rstrip("/")
    scheme = scheme_of(url)
    if not url.split("://", 1)[1].strip("/"):
        raise ConfigError(f"{name}: {url} needs a bucket or path after {scheme}:// (e.g. s3://bucket/kbaudit)")
    try:
        fsspec.get_filesystem_class(scheme)
    except ValueError:
        raise ConfigError(
            f"{name}: unknown storage scheme {scheme!r} in {url}; use a folder, or a URL that fsspec "
            "knows (s3://, gcs://, az://, memory://...)"
        ) from None
    except ImportError as exc:
        entry = known_implementations.get(scheme, {})
        package = PACKAGES.get(scheme) or entry.get("class", scheme).split(".")[0]
        hint = entry.get("err") or str(exc)
        raise ConfigError(
            f"{name}: {url} needs the fsspec backend for {scheme}://, which is not installed "
            f"({hint}); install {package}, e.g. pip install {package.split()[0]!r}"
        ) from None
    return url


def user_cache_dir(environ=None) -> Path:
    """``$XDG_CACHE_HOME/kbaudit`` (~/.cache/kbaudit when unset): what is kept per machine, not
    per store (URL store mirrors, the MiniLM's ONNX export)."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbaudit"


def default_mirror(url: str, environ=None) -> Path:
    """``$XDG_CACHE_HOME/kbaudit/stores/<sha of url>`` (~/.cache when unset)."""
    return user_cache_dir(environ) / "stores" / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
