"""Type stub for the optional compiled MOTION scanner and formatter (``_bvh_numbers.c``)."""

from typing import Any

def parse_motion(
    text: bytes, start: int, out: Any, channels: int, stop: int = ..., /
) -> tuple[int, int] | None: ...
def format_rows(values: Any, columns: int, precision: int, /) -> str: ...
