"""AddOffsetsToTxn (25), versions 0-4: adds the group's __consumer_offsets partition to the
transaction, so TxnOffsetCommit may stage offsets there and EndTxn writes a marker to it.
PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH below v2."""

from protocol.errors import ErrorCode

API_KEY = 25
MIN_VERSION, MAX_VERSION = 0, 4


async def handle(ctx, req):
    txns = ctx.broker.txns
    if txns is None:
        error = ErrorCode.coordinator_not_available
    else:
        error = await txns.add_offsets(req.transactional_id, req.producer_id, req.producer_epoch,
                                       req.group_id)
    if error == ErrorCode.producer_fenced and ctx.api_version < 2:
        error = ErrorCode.invalid_producer_epoch
    return ctx.response(throttle_time_ms=0, error_code=error)
