"""Reading a date from a front matter, JSON, Parquet or heading value (one reader for all sources)."""

from __future__ import annotations

from datetime import UTC, date, datetime


def parse_date(value) -> date | None:
    """A date from a YAML/JSON/Parquet value, or None when it cannot be read."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if hasattr(value, "to_pydatetime"):  # pandas Timestamp
        try:
            return value.to_pydatetime().date()
        except (ValueError, OverflowError):
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if 1000 <= value <= 9999 and float(value).is_integer():
            return date(int(value), 1, 1)
        try:  # epoch seconds (or milliseconds)
            secs = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(secs, tz=UTC).date()
        except (ValueError, OverflowError, OSError):
            return None
    text = str(value).strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    for fmt in ("%Y/%m/%d", "%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %Y", "%b %Y", "%Y-%m", "%Y"):
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    return None
