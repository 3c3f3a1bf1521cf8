"""``kaudit probe share``: what a share group (KIP-932) really delivers, record by record.

- :mod:`~kaudit.probe.share.verify`: pure: each record's treatment (accept, release,
  reject, poison) fixed by its sequence number, the workers' journal format, and every
  record's fate (processed, processed twice and why, rejected, archived, never delivered).
"""
