"""The HTTP API's errors: one JSON shape for every answer that is not a 200, and the body-size limit.

Every error body is `{"error": code, "detail": what was wrong, the allowed range and the fix}`,
plus `errors` (where and what) for a request that failed validation. Nothing internal reaches
a client: an unexpected exception is logged with its traceback and answered with a bare 500.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from indexer.build.collections import COLLECTION_NAME_RULE
from search.api_models import (
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    MAX_URL_BYTES,
    SIMILARITY_LISTS,
    SIMILARITY_PAIR,
    ErrorItem,
    ErrorResponse,
)

# The tags of a tagged union's shapes, left out of an error's location: a client wrote `a`, not `pair.a`.
UNION_TAGS = (SIMILARITY_PAIR, SIMILARITY_LISTS)

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """An answer other than 200, with a message that says what was wrong and the fix."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers


# An absolute path of two or more parts, not inside a URL ("http://host/x" keeps its host).
_ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~])/(?:[^/\s'\"`]+/)+([^/\s'\"`]*)")


def redact(text: str, named: dict[str, str]) -> str:
    """`text` as an answer may show it: each string in `named` (a folder, a database URL) replaced
    by its stand-in, longest first, then any other absolute path by ".../its-last-part". The
    server's own log keeps the full text."""
    for secret in sorted((key for key in named if key), key=len, reverse=True):
        text = text.replace(secret, named[secret])
    return _ABSOLUTE_PATH.sub(lambda m: f".../{m.group(1)}" if m.group(1) else "...", text)


def error_body(code: str, detail: str, errors: list[dict[str, str]] | None = None) -> dict[str, Any]:
    items = None if errors is None else [ErrorItem(**item) for item in errors]
    return ErrorResponse(error=code, detail=detail, errors=items).model_dump(exclude_none=True)


def _shown_input(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _validation_body(exc: RequestValidationError) -> dict[str, Any]:
    """Pydantic's errors as one sentence per field, each naming where, what and the allowed range."""
    items = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err.get("loc", ()) if part not in UNION_TAGS)
        msg = err.get("msg", "invalid value")
        if err.get("type") == "string_pattern_mismatch":
            msg = COLLECTION_NAME_RULE if loc == "path.name" else "should hold some words, not only whitespace"
        if "input" in err and err.get("type") not in ("missing", "json_invalid") and not isinstance(
            err["input"], dict
        ):
            msg += f" (got {_shown_input(err['input'])})"
        items.append({"loc": loc, "msg": msg})
    detail = "; ".join(f"{item['loc']}: {item['msg']}" for item in items) or "Invalid request."
    return error_body("invalid_request", detail.rstrip(".") + ". See /docs for every field and its range.", items)


def install_error_handlers(app: FastAPI) -> None:
    """JSON bodies for ApiError, validation errors, 404/405 and anything unexpected (a bare 500)."""
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.detail), exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(_validation_body(exc), 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        # The traceback goes to the log, never to the client.
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return JSONResponse(
            error_body("internal_error", "The server failed to answer this request; its log says why."), 500
        )


class BodySizeLimit:
    """Refuses a request body over `max_bytes` with a 413, by its Content-Length and by the bytes
    that actually arrive (a chunked body declares no length). The body is read before the route
    runs, at most `max_bytes` of it, and replayed to the route."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"The request body is over {self.max_bytes} bytes, the most this API accepts."
        await JSONResponse(error_body("body_too_large", detail), 413)(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._too_large(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before sending its body: nobody to answer
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)


class RequestHeadLimit:
    """Refuses, in the API's JSON shape, a request whose URL (path and query string) is over
    `max_url` bytes (414) or whose headers are over `max_headers` bytes together (431), before
    any route reads them."""

    def __init__(self, app: ASGIApp, max_url: int = MAX_URL_BYTES, max_headers: int = MAX_HEADER_BYTES) -> None:
        self.app = app
        self.max_url = max_url
        self.max_headers = max_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            url = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string", b""))
            headers = sum(len(name) + len(value) for name, value in scope["headers"])
            refusal = None
            if url > self.max_url:
                refusal = (414, "uri_too_long", f"The URL is {url} bytes, over the {self.max_url} this API "
                           "accepts; send a long query in the body of POST /search instead.")
            elif headers > self.max_headers:
                refusal = (431, "headers_too_large", f"The request headers are {headers} bytes together, "
                           f"over the {self.max_headers} this API accepts.")
            if refusal is not None:
                status, code, detail = refusal
                await JSONResponse(error_body(code, detail), status)(scope, receive, send)
                return
        await self.app(scope, receive, send)
