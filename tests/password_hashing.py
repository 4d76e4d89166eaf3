"""The password hasher of the test run: Django's PBKDF2 at 1,000 rounds instead of 1,000,000.

Every tenant a test makes has an owner with a password, and a million rounds
cost about 0.3 s of one core each time: minutes over the suite. The hash keeps
PBKDF2's format (``pbkdf2_sha256$1000$...``), so a server started with the
production settings (``tests/ops``, ``make run``) still checks these passwords
(and upgrades them to its own round count at the first login).
"""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FewRoundsPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1_000
