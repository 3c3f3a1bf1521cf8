"""Policy files: schema, loader with file:line errors, built-in profiles.

Import from the submodules (``kaudit.policy.loader``, ``kaudit.policy.model``);
this package stays empty so the rules can import the models without a cycle.
"""
