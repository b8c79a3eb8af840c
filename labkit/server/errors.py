"""The one error shape the server answers with: an HTTP status and llama-server's JSON body."""

from __future__ import annotations


class ApiError(Exception):
    """An error the server reports to the client as JSON with an HTTP status."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 **extra):
        super().__init__(message)
        self.status, self.message, self.type, self.extra = status, message, type_, extra

    def body(self) -> dict:
        return {"error": {"code": self.status, "message": self.message, "type": self.type,
                          **self.extra}}
