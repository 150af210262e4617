"""How a checkpoint row's or an event batch's bytes are stored (schemas 7 and 8): each row on its own.

Until schema 6 a chain of deltas, and a run's event batches, were deflate streams continued row
by row, and each delta is a delta of the record before it: one damaged row made every later row
of its chain (and of its run's events) unreadable. Now the damage stays in the row:

- each row is deflated alone, in the zlib format, whose checksum (adler32) makes a flipped or
  truncated row an error, never other data; a preset dictionary fixed here (`ZDICT`: the words
  every record and event batch uses) keeps a small row small without the rows before it;
- a checkpoint's row also carries the record of its parent (the checkpoint before it in its line):
  its id, what that record is a delta of, and its JSON, ahead of its own (they deflate together,
  the two are alike). A delta is carried as it is; a full record (which starts a chain) as its
  own delta from its parent, as a delta of its tick would have held it (`CheckpointRecord.step`),
  so the row after a damaged full record rebuilds it from the chain before; the first record of a
  line (a run's tick 0, a fork's, a restored run's), which has no delta, is carried whole. So any
  one damaged or deleted row costs its own checkpoint only (a `StoreError` naming it): every other
  record is read from its own row or the copy in its child's. A large tree's first record of a line
  is carried too (54 KB deflated at 10,000 nodes, where its deltas are a few hundred bytes): once a
  line, its second row costs about what its first does. Two damaged rows in a row lose the
  first one's record (its only two copies) and so every record that builds on it: the second,
  and the rest of their line up to the next full record that is not itself damaged. Each of
  those reads a `StoreError` naming a damaged one it needs; none reads as other data;
- what the two copies cost is won back by deflating a delta's row against the deltas of its chain
  before the one it carries (`context`, up to three, their ids ahead of the deflated bytes; 237 ->
  165 KB of rows in bench/checkpoint_growth.py's run): each of those is in two rows (its own and its
  child's), so a reader has it though one row is damaged. A full record, in one row only, never is;
  nor is a large row deflated against anything (a large tree's save stays as fast).

A row is marked `STANDALONE` in its `stream` column (a schema-6 row names its stream's first row,
or is NULL: it starts one), so a store upgraded from schema 6 reads its older rows as before; a
schema-7 row's carried record names no parent (`OF_PREVIOUS`: a delta of the record before it in its
chain, the only kind a schema-7 row carried).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import NamedTuple

STANDALONE = 0  # the `stream` of a row stored on its own (schema 7)
OF_PREVIOUS = 0  # a carried record that is a delta of the record before it in its chain (a schema-7 row's)
_WHOLE = b"-"  # (in a row) the carried record is whole: its line's first, a delta of nothing
_CONTEXT = b":"  # ends the ids of the records a row is deflated against
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


class Carried(NamedTuple):
    """A record a row carries: its id, the id of the record it is a delta of (None: it is whole;
    `OF_PREVIOUS`: the one before it in its chain), and its JSON."""

    id: int
    of: int | None
    json: bytes


class Row(NamedTuple):
    """A row's contents: its own JSON, and the record it carries (None: none)."""

    own: bytes
    carried: Carried | None = None


def encode_row(own: bytes, level: int, carried: Carried | None = None, context: Sequence[Carried] = ()) -> bytes:
    """A row's bytes: `own` (a JSON text), after the record it carries; deflated with the `context`
    records' JSON after `ZDICT` as its dictionary (their ids ahead of the deflated bytes)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS, zdict=ZDICT + b"".join(c.json for c in context))
    head = b""
    if carried is not None:
        of = _WHOLE if carried.of is None else b"%d" % carried.of
        head = compressor.compress(b"%d %s%s%s%s" % (carried.id, of, _SEPARATOR, carried.json, _SEPARATOR))
    ids = b",".join(b"%d" % c.id for c in context) + _CONTEXT if context else b""
    return ids + head + compressor.compress(own) + compressor.flush()


def context_of(data: bytes) -> tuple[list[int], bytes]:
    """The ids of the records a row is deflated against (`encode_row`'s `context`), and its deflated
    bytes; `ValueError` for a row whose head is not that."""
    if not isinstance(data, bytes):
        if not isinstance(data, bytearray | memoryview):
            raise ValueError("no bytes")
        data = bytes(data)
    if not data[:1].isdigit():  # (a zlib stream starts with `x`)
        return [], data
    ids, found, rest = data.partition(_CONTEXT)
    if not found or len(ids) > 200:
        raise ValueError("a context without its end")
    return [int(i) for i in ids.split(b",")], rest


def decode_row(data: bytes | None, context: Sequence[bytes] = ()) -> Row:
    """What `encode_row` stored (`context`: the JSON of the records `context_of` names, in its order);
    `ValueError` for bytes that are not that (flipped, cut short, lengthened, another context)."""
    ids, data = context_of(data)
    if len(ids) != len(context):
        raise ValueError(f"{len(ids)} context records, {len(context)} given")
    inflater = zlib.decompressobj(zlib.MAX_WBITS, zdict=ZDICT + b"".join(context))
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
    head = parts[0].split(b" ")
    if len(head) > 2:
        raise ValueError("a carried record's head of more than two ids")
    of = OF_PREVIOUS if len(head) == 1 else None if head[1] == _WHOLE else int(head[1])
    return Row(parts[2], Carried(int(head[0]), of, parts[1]))


__all__ = ["OF_PREVIOUS", "STANDALONE", "ZDICT", "Carried", "Row", "context_of", "decode_row", "encode_row"]
