"""Connection settings: flags, environment, contexts, properties files, redaction.

Import what you need from its module (``kaudit.connection.settings``...): this package imports
nothing itself, so ``kaudit.connection.redact`` costs a ``--help`` nothing more.
"""
