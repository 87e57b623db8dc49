"""The one logger. Prefect picks it up through PREFECT_LOGGING_EXTRA_LOGGERS=kbaudit."""

import logging

logger = logging.getLogger("kbaudit")
