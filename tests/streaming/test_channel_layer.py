"""The Redis channel layer keeps a quiet consumer: every WebSocket consumer waits on its channel,
and a wait longer than redis-py's default read timeout must not drop the connection."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer

pytestmark = pytest.mark.redis


def test_a_receive_outlasts_the_blocking_pop_and_the_read_timeout() -> None:
    # channels_redis blocks 5 s per pop; redis-py 8 reads with a 5 s timeout unless told otherwise,
    # and the two raced: "redis.exceptions.TimeoutError: Timeout reading" and a dropped socket.
    layer = get_channel_layer()
    assert type(layer).__name__ == "RedisChannelLayer"

    async def scenario() -> dict:
        channel = await layer.new_channel()

        async def later() -> None:
            await asyncio.sleep(6.5)
            await layer.send(channel, {"type": "late.message", "n": 1})

        sender = asyncio.create_task(later())
        try:
            return await asyncio.wait_for(layer.receive(channel), timeout=20)
        finally:
            sender.cancel()

    message = asyncio.run(scenario())
    assert message == {"type": "late.message", "n": 1}
