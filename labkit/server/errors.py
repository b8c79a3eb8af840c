"""The one error shape the server answers with: an HTTP status and llama-server's JSON body
(and :func:`unexpected`, the 500 of an exception nothing expected)."""

from __future__ import annotations

import logging

log = logging.getLogger("labkit.server")


class ApiError(Exception):
    """An error the server reports to the client as JSON with an HTTP status."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 **extra):
        super().__init__(message)
        self.status, self.message, self.type, self.extra = status, message, type_, extra

    def body(self) -> dict:
        return {"error": {"code": self.status, "message": self.message, "type": self.type,
                          **self.extra}}


# What a client is told of an exception nothing expected: the server's fault, not the
# request's; what went wrong (the exception and its traceback) is in the server's log only.
UNEXPECTED = "internal server error (the server's log has the details)"


def unexpected(request, exc: Exception) -> ApiError:
    """An exception nothing expected: log its traceback; llama-server's 500 ``server_error``,
    whose message says nothing of the exception (its text can hold the server's paths,
    settings or the request's own data)."""
    log.error("unexpected error on %s %s", request.method, request.url.path,
              exc_info=(type(exc), exc, exc.__traceback__))
    return ApiError(500, UNEXPECTED, "server_error")
