"""Policies: what a policy file says, how it is read, where the built-in profiles are.

``model`` holds the frozen records the engine and the rules evaluate against,
``loader`` reads and validates policy files (``file:line`` errors), and
``builtin`` finds the profiles shipped in ``policies/``. Import from those
modules; this package imports nothing, so reading the models never loads the
rule registry.
"""
