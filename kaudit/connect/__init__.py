"""Connection settings: flags, environment, contexts, properties files, redaction."""

from kaudit.connect.settings import ConnectionSettings, resolve_connection

__all__ = ["ConnectionSettings", "resolve_connection"]
