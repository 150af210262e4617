"""No URL shows its credentials: every place that shows or stores a URL (a model endpoint, a store,
an MCP server, a message quoting one) passes it through `masked_url`.

A URL carries secrets in its user part (`http://user:pass@host/v1`) and in query parameters that
name them (`?password=…`, `?api_key=…`, `?token=…`): each is replaced by `***`, whether the URL
parses or not (a driver that cannot read a URL quotes it as given). A driver may also quote a
secret alone (`invalid percent-encoded token: "…"`): `url_secrets` gives the forms to remove.
"""

from __future__ import annotations

import re
import traceback
import urllib.parse

MASK = "***"
# scheme://user:password@ (the password up to the last @ of the word), or user:password@ opening a
# word (a URL given without its scheme, as an error quotes it back)
_USER_PART = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\"'<>]*):(?P<password>[^\s\"'<>]*)@")
_BARE_USER_PART = re.compile(r"(?<![^\s\"'(<=])(?P<head>[^\s:/?#@\"'<>]+):(?!//)(?P<password>[^\s\"'<>/]*)@")
_SECRET_PARAMETER = re.compile(r"(?P<head>[?&;][\w.-]*(?:pass|secret|token|key|auth|sig)[\w.-]*=)(?P<value>[^&#;\s\"'<>]+)",
                               re.IGNORECASE)


def masked_url(text: str) -> str:
    """`text` (a URL, or a message quoting some) with every password and secret parameter as `***`."""
    if "@" not in text and "=" not in text:
        return text
    text = _USER_PART.sub(lambda found: f"{found['head']}:{MASK}@", text)
    text = _BARE_USER_PART.sub(lambda found: f"{found['head']}:{MASK}@", text)
    return _SECRET_PARAMETER.sub(lambda found: f"{found['head']}{MASK}", text)


def url_secrets(url: str) -> list[str]:
    """The password and secret parameters of `url`, as written and percent-decoded, longest first;
    a password holding `@` also by its pieces (a driver may read the first `@` as the end of it
    and the rest as the host it then names)."""
    found = [piece for match in (*_USER_PART.finditer(url), *_BARE_USER_PART.finditer(url))
             for piece in (match["password"], *match["password"].split("@")) if len(piece) >= 3]
    found += [match["value"] for match in _SECRET_PARAMETER.finditer(url)]
    forms = {form for written in found for form in (written, urllib.parse.unquote(written))} - {""}
    return sorted(forms, key=len, reverse=True)


def masked_traceback(exc: BaseException) -> str:
    """`exc`'s traceback as Python prints it (`--debug`), every URL's secrets masked: a message in it may
    quote the URL it failed on."""
    return masked_url("".join(traceback.format_exception(exc)))


__all__ = ["MASK", "masked_traceback", "masked_url", "url_secrets"]
