"""Fast, strict parsing of the numeric MOTION block of a BVH file.

The MOTION block is megabytes of ASCII decimals (``-5.4029 16.9002 ...``), one frame per line; parsing
it dominates reading a BVH file. ``str.split`` + ``float`` costs ~170 ns a number and ``np.loadtxt``
~70 ns on the development machine. This module works on the bytes with whole-array NumPy operations:

1. token ends come from the whitespace mask (one ``flatnonzero``);
2. the 8 bytes that end each token are gathered as one unaligned ``uint64``, giving a right-aligned
   ``(T, 8)`` byte matrix (when more than a quarter of the tokens are longer, 16 bytes for all);
3. per-character classes (digit, ``.``, ``-``, ``+``, ``e``) are packed into one bit mask per token
   (``np.packbits``), so validation and the positions of the dot, sign and exponent are integer
   operations on ``(T,)`` vectors;
4. the digits become one integer per token by SWAR arithmetic on the ``uint64`` (pairs, quads, octets);
5. value = integer / 10**decimals (times 10**exponent) in one correctly rounded IEEE operation, so it
   equals Python's ``float(token)`` exactly (all tokens have at most 15 digits at this point).

Tokens of 9-15 characters are finished afterwards in one 16-byte pass over all of them; longer ones
and decimal exponents beyond +-22 (rare) go through ``float`` one by one. Work is done in chunks of
whole lines (~256 KiB) so the temporaries stay in cache. A line with the wrong number of values is
reported right away; anything else unusual (``nan``, stray bytes, malformed numbers) sends the whole
block through a plain Python path that either returns the same values or raises
:class:`~skelanim.errors.FormatError` naming the first bad line and token. Accepted grammar (both paths): ``[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?``,
finite values only.

When the optional compiled scanner :mod:`skelanim.io._bvh_numbers` (``_bvh_numbers.c``, built by
``pip install``) is present it is tried first: one pass over the bytes, the same grammar, values equal to
``float(token)`` bit for bit. It accepts only valid blocks; for anything else it answers ``None`` and the
NumPy path above runs, so error messages are the same with or without it. :data:`NATIVE` is that module
or ``None``; :func:`number_parser` names the path in use. The compiled scanner releases the GIL, so a
large block (≥ :data:`THREAD_CHUNK_BYTES` a CPU) is cut at newlines into one chunk per available CPU
(at most :data:`MAX_THREADS`), scanned by as many threads at once into their own rows of the result.

Writing goes the other way: :func:`format_motion_values` gives frame lines of ``%.{precision}f`` numbers, the
text Python's ``%`` operator gives, from the compiled ``format_rows`` when present (about seven times faster:
a number's digits come from the correctly rounded integer ``x * 10**precision``, ties to even as Python
rounds; values beyond its range go through Python's own formatter) and from ``%`` otherwise.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import threading
from types import ModuleType

import numpy as np

from skelanim.errors import FormatError

NATIVE: ModuleType | None
try:
    from skelanim.io import _bvh_numbers as _compiled

    NATIVE = _compiled
except ImportError:  # not compiled (no C compiler at install time): the NumPy path does everything
    NATIVE = None

__all__ = ["MAX_THREADS", "NATIVE", "NUMBER_RE", "THREAD_CHUNK_BYTES", "format_motion_values", "number_parser",
           "parse_motion_values"]

#: Bytes of MOTION text each extra scanning thread must have to be worth starting (~0.1 ms a thread).
THREAD_CHUNK_BYTES = 1 << 18
#: Most threads that scan one block.
MAX_THREADS = 8

#: A BVH number, as accepted by the readers (no ``nan``/``inf``, no underscores, ASCII digits only).
NUMBER_RE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

_CHUNK = 1 << 18  # bytes of text per chunk: the temporaries of one chunk fit in L2 cache
_FRONT = 16  # spaces before a chunk so that every 16-byte window ending at a token is in bounds
_U8 = np.uint8
_U64 = np.uint64
_LE64 = np.dtype("<u8")  # the text's bytes as words (``_Scan.words``), whatever the host's byte order


def _bit_tables(bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Lookup tables indexed by a dot-position bit mask (a single bit ``1 << p`` or 0 for no dot).

    Returns ``split``, ``nine``, ``div`` and ``pos`` for the formula
    ``value = (A - floor(A / split) * nine) / div`` that deletes the dot from the digit integer ``A``,
    plus ``pos`` (the bit index, -1 for none).
    """
    size = 1 << bits
    split = np.full(size, 1e30)
    nine = np.zeros(size)
    div = np.ones(size)
    pos = np.full(size, -1, np.int64)
    for p in range(bits):
        split[1 << p] = 10.0 ** (p + 1)
        nine[1 << p] = 9.0 * 10.0**p
        div[1 << p] = 10.0**p
        pos[1 << p] = p
    return split, nine, div, pos


_TABLES = {8: _bit_tables(8), 16: _bit_tables(16)}
_POW10 = np.array([10.0**k for k in range(23)])
# 10**e for e in [-22, 22] as (multiplier, divisor): one of them is 1, so M * mul / div rounds once.
_EXP_MUL = np.array([1.0] * 22 + [10.0**k for k in range(23)])
_EXP_DIV = np.array([10.0**k for k in range(22, 0, -1)] + [1.0] * 23)
_LOWMASK = np.array([(1 << k) - 1 for k in range(17)], np.int64)


def _pack(mask: np.ndarray, bits: int) -> np.ndarray:
    """``(T, bits)`` bool -> ``(T,)`` uint mask with bit ``p`` = column ``bits - 1 - p``."""
    packed = np.packbits(mask.reshape(-1))
    return packed if bits == 8 else packed.view(">u2").astype(np.uint16)


def _swar_digits(v: np.ndarray) -> np.ndarray:
    """``(T,)`` or ``(T, 2)`` uint64 holding 8 or 16 digit values (0-9, one per byte, most significant
    first in memory) -> ``(T,)`` float64 integers, in three multiply-shift steps (pairs, quads, octets)."""
    v = v * _U64(10 * 256 + 1)
    v >>= _U64(8)
    v &= _U64(0x00FF00FF00FF00FF)
    v *= _U64(100 * 65536 + 1)
    v >>= _U64(16)
    v &= _U64(0x0000FFFF0000FFFF)
    v *= _U64(10000 * (1 << 32) + 1)
    v >>= _U64(32)
    if v.ndim == 2:
        v = v[:, 0] * _U64(100_000_000) + v[:, 1]
    return v.astype(np.float64)


def _windows_to_values(ch: np.ndarray, before: np.ndarray | None, has_e: bool, has_plus: bool,
                       nonws: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Values of the tokens that end each row of right-aligned byte windows.

    Parameters
    ----------
    ch:
        ``(T, K)`` uint8, ``K`` in (8, 16); row ``t`` holds the ``K`` bytes ending at token ``t``'s last
        character (earlier bytes: whitespace and possibly the previous token).
    before:
        ``(T,)`` uint8, the byte before each window (tells a ``K``-character token from a longer one), or
        None to treat every ``K``-character token as long (16 digits do not fit a float exactly).
    has_e, has_plus:
        Whether the text contains ``e``/``E`` or ``+`` at all (skips their passes when not).
    nonws:
        ``_pack(ch > 32)`` if the caller has it already.

    Returns
    -------
    ``(values, long)``: ``(T,)`` float64 and ``(T,)`` bool marking tokens longer than the window
    (their value is not computed); ``None`` if any other token is not a well-formed number. Values are
    NaN for well-formed tokens whose decimal exponent is beyond +-22 (not exact in one rounding; the
    caller parses those few with ``float``).
    """
    k = ch.shape[1]
    split_t, nine_t, div_t, pos_t = _TABLES[k]
    nonws = _pack(ch > 32, k) if nonws is None else nonws
    inr = nonws & ~(nonws + 1)  # the run of non-space bits from bit 0: this token's characters
    long = inr == (1 << k) - 1
    if before is not None:
        long &= before > 32
    n_long = int(np.count_nonzero(long))
    if n_long:
        inr *= ~long
    d = ch - _U8(48)
    digb = _pack(d < 10, k) & inr
    dotb = _pack(ch == 46, k) & inr
    minb = _pack(ch == 45, k) & inr
    known = digb | dotb | minb
    sgnb = minb
    if has_plus:
        sgnb = minb | (_pack(ch == 43, k) & inr)
        known |= sgnb
    eb = None
    if has_e:
        eb = _pack((ch | 32) == 101, k) & inr
        known |= eb
    if not np.array_equal(known, inr) or (dotb & (dotb - 1)).any():
        return None  # a character that is not part of a number, or two dots
    top = inr ^ (inr >> 1)  # the token's first character
    d *= np.unpackbits(digb.view(_U8) if k == 8 else digb.astype(">u2").view(_U8)).reshape(d.shape)
    e_rows = np.flatnonzero(eb) if eb is not None else np.empty(0, np.int64)
    if e_rows.size:
        plain_sgn = sgnb.copy()
        plain_sgn[e_rows] = 0
        plain_dig = digb.copy()
        plain_dig[e_rows] = 1
    else:
        plain_sgn, plain_dig = sgnb, digb
    # every token without an exponent: sign only first, at least one digit (long rows have inr == 0)
    if (plain_sgn & ~top).any() or np.count_nonzero(plain_dig) != digb.size - n_long:
        return None
    words = d.view("<u8")
    a = _swar_digits(words.reshape(-1) if k == 8 else words)  # the digits as one integer, dot = 0
    # value = (a with the dot's zero digit removed) / 10**decimals: digits left of the dot weigh 10x too much
    first_dot = int(dotb[int(np.argmin(long))]) if n_long < long.size else 0
    if first_dot and not e_rows.size and not ((dotb != first_dot) & ~long).any():
        # the common case: every number has the same number of decimals
        pd = first_dot.bit_length() - 1
        values = np.floor(a / 10.0 ** (pd + 1))
        values *= -9.0 * 10.0**pd
        values += a
        values /= 10.0**pd
    else:
        values = (a - np.floor(a / split_t.take(dotb)) * nine_t.take(dotb)) / div_t.take(dotb)
        if e_rows.size and eb is not None:
            exp_values = _exponent_values(a[e_rows], digb[e_rows], dotb[e_rows], sgnb[e_rows], minb[e_rows],
                                          eb[e_rows], top[e_rows], pos_t)
            if exp_values is None:
                return None
            values[e_rows] = exp_values
    negative = (minb & top) != 0
    values.view(_U64)[...] ^= negative.astype(_U64) << _U64(63)
    return values, long


def _exponent_values(a, digb, dotb, sgnb, minb, eb, top, pos_t) -> np.ndarray | None:
    """Unsigned values of tokens with an exponent (all arguments ``(E,)`` rows of the token masks)."""
    if (eb & (eb - 1)).any():
        return None
    pe = pos_t[eb]  # bit index of the 'e'; exponent digits are below it, mantissa above
    low = _LOWMASK[pe]
    if (pe < 1).any() or not (digb & low).all() or not (digb >> (pe + 1)).all() or (dotb & (low | eb)).any():
        return None
    exp_sign_bit = (1 << np.maximum(pe - 1, 0)).astype(sgnb.dtype)
    if (sgnb & ~(top | exp_sign_bit)).any():
        return None
    scale = _POW10[np.minimum(pe + 1, 22)]
    mant = np.floor(a / scale)
    expv = a - mant * scale
    expv[(minb & exp_sign_bit) != 0] *= -1
    pd = pos_t[dotb]
    has_dot = pd >= 0
    pd_m = np.where(has_dot, pd - pe - 1, 0)
    split = np.where(has_dot, _POW10[np.clip(pd_m + 1, 0, 22)], 1e30)
    mant = mant - np.floor(mant / split) * (9.0 * _POW10[np.clip(pd_m, 0, 22)] * has_dot)
    e10 = expv - pd_m
    out_of_range = np.abs(e10) > 22
    idx = (np.clip(e10, -22, 22) + 22).astype(np.int64)
    values = mant * _EXP_MUL[idx] / _EXP_DIV[idx]
    values[out_of_range] = np.nan  # not exact in one rounding: the caller parses these with float()
    return values


class _Scan:
    """The padded MOTION text as bytes, ``uint8`` and unaligned ``uint64`` views (shared by all chunks)."""

    def __init__(self, body: bytes) -> None:
        self.buf = b" " * _FRONT + body + b" " * 8
        self.raw = np.frombuffer(self.buf, _U8)
        self.words = np.ndarray((self.raw.size - 7,), dtype="<u8", buffer=self.buf, strides=(1,))
        self.has_e = b"e" in body or b"E" in body
        self.has_plus = b"+" in body


def _fast_chunk(scan: _Scan, start: int, stop: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Tokens of the whole lines in ``body[start:stop]``, or ``None`` to use the exact slow path.

    Returns
    -------
    ``(values, counts, odd, odd_ends)``: ``(T,)`` float64 in text order, NaN for tokens of 9+ characters
    (and tiny/huge exponents); ``(lines,)`` int64 tokens per line; the NaN rows and the buffer
    positions one past their last character.
    """
    seg = scan.raw[_FRONT + start : _FRONT + stop + 1]  # one byte past the chunk: a space or newline
    if np.count_nonzero(seg < 9) or np.count_nonzero((seg - _U8(14)) < 18):
        return None  # control characters that are not whitespace
    nonws = seg > 32
    ends = np.flatnonzero(nonws[:-1] > nonws[1:])
    ends += _FRONT + start + 1  # buffer position one past each token's last character
    newlines = np.flatnonzero(seg[:-1] == 10)
    n_lines = newlines.size + (0 if stop > start and scan.buf[_FRONT + stop - 1] == 10 else 1)
    if ends.size == 0:
        return np.empty(0), np.zeros(n_lines, np.int64), ends, ends
    ch = scan.words[ends - 8].view(_U8).reshape(-1, 8)
    before = scan.raw[ends - 9]
    nonws8 = np.packbits(ch > 32)
    if np.count_nonzero((nonws8 == 255) & (before > 32)) > ends.size // 4:  # many tokens of 9+ characters
        wide = np.empty((ends.size, 2), _LE64)  # little-endian as the words: its bytes are the text's on any host
        wide[:, 0] = scan.words[ends - 16]
        wide[:, 1] = ch.view(_LE64).reshape(-1)
        result = _windows_to_values(wide.view(_U8).reshape(-1, 16), None, scan.has_e, scan.has_plus)
    else:
        result = _windows_to_values(ch, before, scan.has_e, scan.has_plus, nonws8)
    if result is None:
        return None
    values, long = result
    if long.any():
        values[long] = np.nan
    odd = np.flatnonzero(np.isnan(values)) if long.any() or scan.has_e else ends[:0]
    done = np.searchsorted(ends, newlines + (_FRONT + start), side="right")  # tokens before each newline
    if n_lines > newlines.size:  # a last line without a newline
        done = np.append(done, ends.size)
    return values, np.diff(done, prepend=0), odd, ends[odd]


def _fill_long_tokens(scan: _Scan, values: np.ndarray, rows: np.ndarray, ends: np.ndarray) -> bool:
    """Set ``values[rows]`` for the tokens ending before buffer positions ``ends`` (9+ characters, or
    tiny/huge exponents).

    One 16-byte pass over all of them; the few beyond that (16+ characters, decimal exponents beyond
    +-22) are parsed with ``float``. Returns False if one of them is not a well-formed finite number.
    """
    if not rows.size:
        return True
    wide = np.empty((rows.size, 2), _LE64)
    wide[:, 0] = scan.words[ends - 16]
    wide[:, 1] = scan.words[ends - 8]
    result = _windows_to_values(wide.view(_U8).reshape(-1, 16), None, scan.has_e, scan.has_plus)
    if result is None:
        return False
    wide_values, longer = result
    wide_values[longer] = np.nan
    values[rows] = wide_values
    for i in np.flatnonzero(np.isnan(wide_values)).tolist():  # rare: parsed one by one
        end = begin = int(ends[i])
        while begin > 0 and scan.buf[begin - 1] > 32:  # back to the token's start (not a copy of all before it)
            begin -= 1
        token = scan.buf[begin:end]
        if NUMBER_RE.fullmatch(token) is None:
            return False
        value = float(token)
        if not np.isfinite(value):
            return False
        values[rows[i]] = value
    return True


def _slow_chunk(chunk: bytes, first_line: int, path: str, channels: int, frames_before: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """The exact path for whole lines: ``(values, counts)`` as :func:`_fast_chunk` gives them, or a
    :class:`FormatError` at the first bad line (a wrong value count or a token that is not a number)."""
    lines = chunk.split(b"\n")
    if chunk.endswith(b"\n"):
        lines.pop()
    counts = np.empty(len(lines), np.int64)
    values: list[float] = []
    for i, text in enumerate(lines):  # the first bad line is reported, whatever is wrong with it
        words = text.split()
        for w in words:
            if NUMBER_RE.fullmatch(w) is None:
                raise FormatError(f"expected a number, found {_show(w)}", path=path, line=first_line + i)
        numbers = [float(w) for w in words]
        for w, number in zip(words, numbers):
            if not math.isfinite(number):
                raise FormatError(f"number out of range: {_show(w)}", path=path, line=first_line + i)
        counts[i] = len(words)
        if words and len(words) != channels:
            _check_counts(counts[: i + 1], channels, first_line, frames_before, path)
        values.extend(numbers)
    return np.array(values, dtype=np.float64), counts


def _check_counts(counts: np.ndarray, channels: int, first_line: int, frames_before: int, path: str) -> None:
    """Every non-blank line holds ``channels`` values, else a :class:`FormatError` at the first that does not."""
    bad = np.flatnonzero((counts != channels) & (counts != 0))
    if bad.size:
        i = int(bad[0])
        frame = frames_before + int(np.count_nonzero(counts[:i]))  # counted from 0, as motion[frame]
        raise FormatError(
            f"expected {channels} channel values on frame {frame}, found {int(counts[i])}",
            path=path,
            line=first_line + i,
        )


def _show(token: bytes) -> str:
    text = token[:40].decode("ascii", "backslashreplace")
    return repr(text + ("..." if len(token) > 40 else ""))


def _parse_fast(scan: _Scan, chunks: list[tuple[int, int]], channels: int, first_line: int, path: str
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """All chunks by the vectorised path: ``(values, counts)``, or None where it cannot decide."""
    parts, line_counts, odd_rows, odd_ends = [], [], [], []
    line, tokens, frames = first_line, 0, 0
    for start, stop in chunks:
        result = _fast_chunk(scan, start, stop)
        if result is None:
            return None
        values, counts, odd, ends = result
        parts.append(values)
        line_counts.append(counts)
        if odd.size:
            odd_rows.append(odd + tokens)
            odd_ends.append(ends)
        line += counts.size
        tokens += values.size
        frames += int(np.count_nonzero(counts))
    values = np.concatenate(parts) if len(parts) > 1 else (parts[0] if parts else np.zeros(0))
    if odd_rows and not _fill_long_tokens(scan, values, np.concatenate(odd_rows), np.concatenate(odd_ends)):
        return None  # a bad long token: the exact path names the first bad line, which may come before a count error
    counts = np.concatenate(line_counts) if line_counts else np.zeros(0, np.int64)
    _check_counts(counts, channels, first_line, 0, path)
    return values, counts


def _parse_slow(body: bytes, chunks: list[tuple[int, int]], channels: int, first_line: int, path: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """All chunks by the exact path (raises at the first bad line)."""
    parts, line_counts = [], []
    line, frames = first_line, 0
    for start, stop in chunks:
        values, counts = _slow_chunk(body[start:stop], line, path, channels, frames)
        parts.append(values)
        line_counts.append(counts)
        line += counts.size
        frames += int(np.count_nonzero(counts))
    values = np.concatenate(parts) if len(parts) > 1 else (parts[0] if parts else np.zeros(0))
    counts = np.concatenate(line_counts) if line_counts else np.zeros(0, np.int64)
    return values, counts


def number_parser() -> str:
    """Which path parses MOTION blocks here: ``"C extension"`` or ``"NumPy"`` (the extension is missing)."""
    return "C extension" if NATIVE is not None else "NumPy"


def format_motion_values(values: np.ndarray, precision: int) -> str:
    """Frame lines for ``values`` ``(F, C)``: each row's numbers as ``"%.{precision}f"``, separated by single
    spaces, each line ending with ``"\\n"`` (an empty line per row when ``C == 0``); ``precision`` in ``[0, 17]``.
    The compiled path (:data:`NATIVE`) and the ``%`` operator give the same text."""
    rows, columns = values.shape
    if columns == 0:
        return "\n" * rows
    if NATIVE is not None:
        return str(NATIVE.format_rows(np.ascontiguousarray(values, dtype=np.float64), columns, precision))
    row = " ".join([f"%.{precision}f"] * columns)
    return "".join(row % tuple(r) + "\n" for r in values.tolist())


def _too_few_frames(frames: int, found: int, frames_line: int | None, path: str, line: int) -> FormatError:
    where = f" (line {frames_line})" if frames_line is not None else ""
    return FormatError(
        f"expected {frames} frames as declared by 'Frames:'{where}, found {found} frame line{'s' if found != 1 else ''}",
        path=path,
        line=line,
    )


def _available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _line_chunks(body: bytes, start: int, parts: int) -> list[tuple[int, int]]:
    """Cut ``body[start:]`` into at most ``parts`` ``(begin, end)`` ranges of whole lines (each but the
    last ends just after a ``\\n``), of about equal size."""
    bounds = [start]
    step = (len(body) - start) // parts
    for k in range(1, parts):
        cut = body.find(b"\n", max(start + k * step, bounds[-1]))
        if cut < 0 or cut + 1 >= len(body):
            break
        bounds.append(cut + 1)
    bounds.append(len(body))
    return list(itertools.pairwise(bounds))


def _scan_native(body: bytes, start: int, out: np.ndarray, channels: int) -> tuple[int, int] | None:
    """Run the compiled scanner over ``body[start:]`` into ``out`` ``(R, C)``: ``(frame_lines, lines)``
    or ``None`` (a block it does not accept). A large block is cut into line chunks scanned by several
    threads at once: the first into ``out``, each other one into a buffer of its own (as many rows as its
    bytes can hold), copied after the frames before it."""
    assert NATIVE is not None
    parts = min(MAX_THREADS, _available_cpus(), (len(body) - start) // THREAD_CHUNK_BYTES)
    if parts < 2:
        return NATIVE.parse_motion(body, start, out, channels)
    chunks = _line_chunks(body, start, parts)
    buffers = [out] + [np.empty(((end - begin) // (2 * channels) + 1, channels)) for begin, end in chunks[1:]]
    results: list[tuple[int, int] | None] = [None] * len(chunks)

    def scan(k: int) -> None:
        begin, end = chunks[k]
        try:
            results[k] = NATIVE.parse_motion(body, begin, buffers[k], channels, end)
        except Exception:  # noqa: BLE001 - (MemoryError in the exact path) left as None: the NumPy path re-reads
            results[k] = None

    threads = [threading.Thread(target=scan, args=(k,), daemon=True) for k in range(1, len(chunks))]
    for thread in threads:
        thread.start()
    scan(0)
    for thread in threads:
        thread.join()
    frame_lines = lines = 0
    for k, result in enumerate(results):
        if result is None:  # a bad token or line somewhere (or an exception raised in a thread)
            return None
        found, n_lines = result
        if k and frame_lines < len(out):
            kept = min(found, len(out) - frame_lines)
            out[frame_lines:frame_lines + kept] = buffers[k][:kept]
        frame_lines += found
        lines += n_lines
    return frame_lines, lines


def parse_motion_values(
    body: bytes,
    *,
    first_line: int,
    channels: int,
    frames: int,
    path: str,
    frames_line: int | None = None,
    start: int = 0,
) -> tuple[np.ndarray, int]:
    """Parse the frame lines of a BVH MOTION block.

    Parameters
    ----------
    body:
        The bytes after the ``Frame Time`` line (lines separated by ``\\n``; ``\\r`` counts as space), or
        a whole file's bytes with ``start`` the offset of that line.
    first_line:
        1-based line number of the first line of ``body`` in the file (for messages).
    channels:
        ``C``, the number of channel values each frame line must hold.
    frames:
        ``F``, the frame count declared by ``Frames:``. Fewer frame lines is an error; extra frame lines are
        ignored (their number is returned), a bad one among them too (an export cut off after its frames).
    path:
        File name used in error messages.
    frames_line:
        Line of the ``Frames:`` declaration, quoted when the counts disagree.
    start:
        Offset of the block in ``body`` (no copy is made of it on the compiled path).

    Returns
    -------
    ``(values, extra)``: ``(F, C)`` float64 channel values as written (degrees for rotations) and the
    number of frame lines beyond ``F`` that were ignored.

    Raises
    ------
    FormatError
        A token that is not a finite number, a frame line with the wrong number of values, or fewer
        frame lines than declared: the message names the file, the line and what was expected.
    """
    if not 0 <= start <= len(body) or frames < 0 or channels < 0:
        raise ValueError(f"parse_motion_values: start {start} outside the {len(body)} bytes, or a negative count "
                         f"(frames {frames}, channels {channels})")
    if channels and NATIVE is not None:
        # at most as many rows as the text can hold ("0 0 ... 0\n": 2C bytes a line, the last without its "\n"),
        # whatever 'Frames:' says
        rows = min(frames, (len(body) - start + 1) // (2 * channels))
        out = np.empty((rows, channels))
        scanned = _scan_native(body, start, out, channels)
        if scanned is not None:  # a valid block; otherwise the paths below find and report the problem
            found, n_lines = scanned
            if found < frames:
                raise _too_few_frames(frames, found, frames_line, path, first_line + max(n_lines - 1, 0))
            return out, found - frames
    if start:
        body = body[start:]
    try:
        values, counts = _parse_numpy(body, channels, first_line, path)
    except FormatError as err:  # a bad line after the declared frames (an export cut off there) loses none of them
        ends = _filled_line_ends(body)
        cut = int(ends[frames - 1]) if 0 < frames <= len(ends) else 0
        if not cut or err.line is None or err.line < first_line + body.count(b"\n", 0, cut):
            raise
        values, counts = _parse_numpy(body[:cut], channels, first_line, path)
        return values.reshape(frames, channels), len(ends) - frames
    found = int(np.count_nonzero(counts)) if channels else frames
    if found < frames:
        raise _too_few_frames(frames, found, frames_line, path, first_line + max(counts.size - 1, 0))
    if channels == 0:
        return np.zeros((frames, 0)), 0
    return values[: frames * channels].reshape(frames, channels), found - frames


def _parse_numpy(body: bytes, channels: int, first_line: int, path: str) -> tuple[np.ndarray, np.ndarray]:
    """The frame lines of ``body`` by the NumPy paths: ``(values, counts)``, the values of every line in a row and
    each line's count (0 for a blank one); a :class:`FormatError` at the first bad line."""
    scan = _Scan(body)
    chunks: list[tuple[int, int]] = []
    start, n = 0, len(body)
    while start < n:
        stop = body.find(b"\n", min(start + _CHUNK, n))
        stop = n if stop < 0 else stop + 1
        chunks.append((start, stop))
        start = stop
    result = _parse_fast(scan, chunks, channels, first_line, path)
    if result is None:  # something unusual: the exact path parses it or reports the first bad line
        result = _parse_slow(body, chunks, channels, first_line, path)
    return result



def _filled_line_ends(body: bytes) -> np.ndarray:
    """The offsets just after each line of ``body`` (lines end at ``\\n``) that holds anything but white space."""
    text = np.frombuffer(body, np.uint8)
    ends = np.flatnonzero(text == ord("\n")) + 1
    ends = np.append(ends, len(text)) if len(text) and text[-1] != ord("\n") else ends
    ink = np.concatenate([[0], np.cumsum(~np.isin(text, np.frombuffer(b" \t\r\n\v\f", np.uint8)))])
    return ends[ink[ends] > ink[np.concatenate([[0], ends[:-1]]).astype(np.int64)]]
