"""A tool's observation is text; the images a tool returned travel inside it, after the text.

A run's record keeps each observation as one string, so images carried this way are recorded
and replayed with it. `ToolExecutor` takes them out again (`split_images`): the text goes to
the model as the tool's message, the images as image parts of a user message after the tool
messages (a chat-completions tool message carries text only). Only `with_images` makes marks:
one in the text a tool returned is made inert (`plain`).
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.messages import ImagePart

_MARK = "\x1ejianmu-image:"  # an ASCII record separator first: nothing a tool means to say


class CarryingImages(str):
    """An observation whose image marks `with_images` put there; in any other text a tool returns,
    a mark is the tool's text (`plain`), not an image: a page quoting one sends the model nothing."""


def with_images(text: str, images: Sequence[ImagePart]) -> CarryingImages:
    """`text` carrying `images` along."""
    return CarryingImages(plain(text) + "".join(f"{_MARK}{image.mime_type};base64,{image.data}" for image in images))


def plain(text: str) -> str:
    """`text` with every image mark in it made inert (its record separator dropped)."""
    return text.replace(_MARK, _MARK[1:]) if _MARK in text else text


def split_images(observation: str) -> tuple[str, list[ImagePart]]:
    """(the text, the images) of an observation made by `with_images` (any other: itself, [])."""
    if _MARK not in observation:
        return observation, []
    text, *carried = observation.split(_MARK)
    images = [ImagePart(mime_type=mime, data=data) for mime, _, data in (part.partition(";base64,") for part in carried)]
    return text, images


__all__ = ["CarryingImages", "plain", "split_images", "with_images"]
