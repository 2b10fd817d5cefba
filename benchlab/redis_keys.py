"""Every key benchlab keeps in Redis (live streams, cache) starts with benchlab:<database name>:,
so that benchlabs sharing one Redis (the test suite's test_benchlab beside a real one) never
read, expire or delete each other's keys."""


def redis_prefix(database_name: object) -> str:
    return f"benchlab:{database_name}"
