"""benchlab's API over HTTP (urllib): a token in each request, JSON in and out, and every way it
can fail turned into an error that says what happened and which exit code it is."""

import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from benchlab_cli.config import Config
from benchlab_cli.errors import ApiError, ConnectionFailed

TIMEOUT_S = 60  # a campaign's detail computes its statistics: seconds on a large one, never minutes
USER_AGENT = "benchlab-cli/0.1"


@dataclass(frozen=True)
class Api:
    config: Config

    def get(self, path: str, **query: str) -> Any:
        return json.loads(self.request("GET", path, query=query))

    def post(self, path: str, body: object) -> Any:
        return json.loads(self.request("POST", path, body=body))

    def get_all(self, path: str) -> list[Any]:
        """Every item of a list, page after page (the API pages with limit and offset)."""
        page = self.get(path)
        if isinstance(page, list):
            return page
        items = list(page["results"])
        while page.get("next"):
            page = json.loads(self.request("GET", page["next"]))
            items += page["results"]
        return items

    def page_url(self, path: str) -> str:
        return self.config.url + path

    def request(self, method: str, path: str, *, query: dict[str, str] | None = None, body: object = None) -> bytes:
        url = path if path.startswith(("http://", "https://")) else self.config.url + path
        if query:
            url += "?" + urlencode(query)
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Authorization": f"Token {self.config.token}", "Accept": "application/json, text/csv",
                   "User-Agent": USER_AGENT}  # fmt: skip
        if data is not None:
            headers["Content-Type"] = "application/json"
        # http or https only: config.checked_url refused any other scheme, and `next` links are the API's.
        request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            raise refusal(exc.code, exc.read(), method, url) from None
        except urllib.error.URLError as exc:
            raise ConnectionFailed(f"benchlab at {self.config.url} did not answer: {_reason(exc.reason)}") from None
        except TimeoutError:
            raise ConnectionFailed(f"benchlab at {self.config.url} did not answer within {TIMEOUT_S} s") from None
        except ConnectionError as exc:  # reset or closed mid-answer
            raise ConnectionFailed(f"benchlab at {self.config.url}: the connection broke ({exc})") from None


def _reason(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (is it running, and is that its address?)"
    if isinstance(reason, socket.gaierror):
        return f"no such host ({reason.strerror})"
    return str(getattr(reason, "strerror", None) or reason)


def refusal(status: int, raw: bytes, method: str, url: str) -> ApiError:
    """The API's refusal as a message: what it said, and what the status means for the user."""
    text = raw.decode("utf-8", "replace")
    try:
        body: object = json.loads(text)
    except ValueError:
        body = text
    said = api_message(body)
    if status == 401:
        message = f"the token was refused (401): {said or 'not a valid token'}; check BENCHLAB_TOKEN or --token"
    elif status == 403:
        message = f"forbidden (403): {said or 'your role may not do this'}"
    elif status == 404:
        message = f"not found (404): {method} {url}"
    elif status == 429:
        message = f"too many requests (429): {said}"
    elif status >= 500:
        message = f"benchlab failed ({status}) on {method} {url}; its log says why"
    else:
        message = f"refused ({status}):\n{said}" if "\n" in said else f"refused ({status}): {said}"
    return ApiError(message, status, body)


def api_message(body: object, indent: str = "  ") -> str:
    """DRF's errors in lines: {"detail": "..."} as is, field errors as `field: message` each,
    nested ones (a campaign's base) with their path."""
    if isinstance(body, dict) and set(body) == {"detail"}:
        return str(body["detail"])
    lines = list(_field_lines(body, ""))
    if len(lines) == 1 and lines[0].startswith(": "):
        return lines[0][2:]
    return "\n".join(indent + line for line in lines) if len(lines) > 1 else "".join(lines)


def _field_lines(body: object, path: str) -> Any:
    if isinstance(body, dict):
        for key, value in body.items():
            yield from _field_lines(value, f"{path}.{key}" if path else str(key))
    elif isinstance(body, list) and all(isinstance(item, str) for item in body):
        for item in body:
            yield f"{path}: {item}"
    elif isinstance(body, list):
        for index, item in enumerate(body):
            yield from _field_lines(item, f"{path}[{index}]")
    else:
        yield f"{path}: {body}"
