"""Connection settings: flags, environment, contexts, properties files, redaction.

Import what you need from its module (``kaudit.connect.settings``...): this package imports
nothing itself, so ``kaudit.connect.redact`` costs a ``--help`` nothing more.
"""
