"""The one exception the text front end raises for text a request cannot have.

It lives apart from ``prepare`` so that ``ssml`` and ``language`` can raise it
without importing the entry point that imports them; ``prepare`` re-exports it.
"""

from __future__ import annotations


class TextError(ValueError):
    """Text that cannot be spoken as given (bad SSML, unsupported language...).

    ``field`` names the request field; ``code`` is a short machine code;
    ``status`` the HTTP status the API should answer with (400 or 422).
    """

    def __init__(self, message: str, *, code: str = "invalid_text", status: int = 400, field: str = "text") -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.field = field
