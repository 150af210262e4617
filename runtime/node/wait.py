"""`Wait`: succeed after `duration` seconds, without blocking the loop or polling."""

from __future__ import annotations

import asyncio

from py_trees.common import Status

from ..engine.behaviour import AsyncBehaviour


class Wait(AsyncBehaviour):
    def __init__(self, name: str = "Wait", duration: float = 1.0, namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        self.duration = duration

    async def update_async(self) -> Status:
        await asyncio.sleep(self.duration)
        return Status.SUCCESS


__all__ = ["Wait"]
