"""How a checkpoint row's or an event batch's bytes are stored (schema 7): each row on its own.

Until schema 6 a chain of deltas, and a run's event batches, were deflate streams continued row
by row, and each delta is a delta of the record before it: one damaged row made every later row
of its chain (and of its run's events) unreadable. Now the damage stays in the row:

- each row is deflated alone, in the zlib format, whose checksum (adler32) makes a flipped or
  truncated row an error, never other data; a preset dictionary fixed here (`ZDICT`: the words
  every record and event batch uses) keeps a small row small without the rows before it;
- a delta's row also carries the delta before it in its chain (its id and JSON, ahead of its own:
  they deflate together, the two are alike), so a delta whose row is damaged or gone is read
  from the next row of its chain: the records after it read back exactly. The damaged record
  itself is a `StoreError` naming it. A chain's full record is not carried (a large tree's is
  most of its chain's bytes: carried, they would double): a damaged full record, or two damaged
  rows in a row, cost the records after them up to the chain's next full record, each read a
  `StoreError` naming the damaged one.

A row is marked `STANDALONE` in its `stream` column (a schema-6 row names its stream's first row,
or is NULL: it starts one), so a store upgraded from schema 6 reads its older rows as before.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

STANDALONE = 0  # the `stream` of a row stored on its own (schema 7)
_SEPARATOR = b"\n"  # a compact JSON text never holds a raw newline
# Never change these bytes: every stored row is inflated with them.
ZDICT = (b'"stream":false,"duration_ms":"attempts":1,"finish_reason":"stop","tool_calls":[],"usage":'
         b'{"prompt_tokens":"completion_tokens":"total_tokens":"message_count":"messages":"tools":"round":'
         b'"model":"scripted","empty_retry":false,"keys":["messages"]},"namespace":null,"fresh":true,"tick":'
         b'"approval.requested","approval.resolved","swarm.message.sent","binding.changed","state.edited",'
         b'"run.completed","run.suspended","run.failed","tool.call.started","tool.call.completed",'
         b'"tool.call.failed","model.call.started","model.call.completed","reply.started","reply.completed",'
         b'"text.delta","log",{"text":"state.changed",null,1,"run.started",0,null,'
         b'"tool_call_id":null,"name":null},{"role":"assistant","content":null,"role":"tool","content":'
         b'{"role":"user","content":"child":0},"data":{"iteration_count":{"model":{"position":'
         b'"FAILURE","SUCCESS","INVALID","RUNNING","},"r":{"},"st":{"":{"},"b":{},"w":false,"t":{"s":['
         b'],"c":[],"n":[],"rt":[null,["v",["l",["d"],{"s":{"')


class Row(NamedTuple):
    """A row's contents: its own JSON, and the record before it in its chain (id and JSON) it carries."""

    own: bytes
    before_id: int | None = None
    before: bytes | None = None


def encode_row(own: bytes, level: int, before: tuple[int, bytes] | None = None) -> bytes:
    """A row's bytes: `own` (a JSON text), after `before` (the id and JSON of the record before it)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS, zdict=ZDICT)
    head = b"" if before is None else compressor.compress(b"%d%s%s%s" % (before[0], _SEPARATOR, before[1], _SEPARATOR))
    return head + compressor.compress(own) + compressor.flush()


def decode_row(data: bytes | None) -> Row:
    """What `encode_row` stored; `ValueError` for bytes that are not that (flipped, cut short, lengthened)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ValueError("no bytes")
    inflater = zlib.decompressobj(zlib.MAX_WBITS, zdict=ZDICT)
    try:
        text = inflater.decompress(data) + inflater.flush()
    except zlib.error as exc:
        raise ValueError(str(exc)) from None
    if not inflater.eof or inflater.unused_data:
        raise ValueError("cut short" if not inflater.eof else "bytes after its end")
    parts = text.split(_SEPARATOR)
    if len(parts) == 1:
        return Row(text)
    if len(parts) != 3:
        raise ValueError(f"{len(parts)} parts")
    return Row(parts[2], int(parts[0]), parts[1])


__all__ = ["STANDALONE", "ZDICT", "Row", "decode_row", "encode_row"]
