"""How many live event streams one person holds open, counted in Redis so that every web process
(uvicorn worker) sees the same count.

Each open stream holds a slot: a member of a sorted set per user, scored with the time its lease
ends. A stream gives its slot back when it ends, however it ends (runs/views/live.py); a slot
whose process died without giving it back lapses with its lease (the stream's maximum age and a
margin), so a crash costs a person a slot for minutes, never for good.

Without Redis nothing is counted: a stream cannot be served then anyway (it reads Redis), and
the browser's retries must not be answered with a refusal that stops them for good.
"""

import logging
import uuid
from dataclasses import dataclass, field

import redis

from runs.jobs import live

log = logging.getLogger(__name__)

LEASE_MARGIN_S = 60  # beyond the maximum age: the end's last sends, a slow client's last read

# Atomic across processes: drop lapsed slots, then take one if fewer than the cap are held.
# Redis's own clock, so web processes on several machines agree.
_TAKE = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
"""


def slots_key(user_id: int) -> str:
    return f"{live.stream_prefix()}:stream-slots:user:{user_id}"


@dataclass
class Slot:
    """One stream's slot; giving it back twice is harmless (every exit path does it)."""

    key: str
    member: str
    given_back: bool = field(default=False)

    def give_back(self) -> None:
        if self.given_back:
            return
        self.given_back = True
        try:
            live.client().zrem(self.key, self.member)
        except redis.RedisError as exc:  # it lapses with its lease
            log.warning("stream slot %s not given back: %s", self.key, exc)


def take(user_id: int, cap: int, lease_s: float) -> Slot | None:
    """A slot for one more stream of this user, or None when they hold `cap` already. With Redis
    away, an uncounted slot (see the module's docstring)."""
    slot = Slot(key=slots_key(user_id), member=uuid.uuid4().hex)
    try:
        taken = live.client().eval(_TAKE, 1, slot.key, cap, int(lease_s * 1000), slot.member)
    except redis.RedisError as exc:
        log.warning("stream slots of user %s not counted: %s", user_id, exc)
        slot.given_back = True  # nothing to give back
        return slot
    return slot if taken == 1 else None


def held(user_id: int) -> int:
    """The slots this user holds now (lapsed ones included until the next take drops them)."""
    return int(live.client().zcard(slots_key(user_id)))
