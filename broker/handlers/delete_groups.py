"""DeleteGroups (42): only Empty groups can be deleted (NON_EMPTY_GROUP otherwise); their
offsets and metadata get tombstones in __consumer_offsets."""

API_KEY = 42
MIN_VERSION, MAX_VERSION = 0, 2


async def handle(ctx, req):
    results = ctx.broker.groups.delete_groups(list(req.groups_names))
    return ctx.response(
        throttle_time_ms=0,
        results=[dict(group_id=g, error_code=e) for g, e in results.items()],
    )
