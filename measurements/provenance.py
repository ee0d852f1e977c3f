"""A measured row's provenance text: the `key=value` facts a source writes beside its figures."""

from __future__ import annotations

import re

_IMAGE = re.compile(r"^[\w.\-#]+(/[\w.\-]+)+:[\w.\-]+$")  # registry/repo:tag


def provenance_fields(text: str) -> dict[str, str]:
    """`key=value` parts of a provenance string, plus `image` for a bare registry/repo:tag part."""
    fields: dict[str, str] = {}
    for part in (p.strip() for p in text.split(";")):
        key, sep, value = part.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
        elif _IMAGE.match(part):
            fields.setdefault("image", part)
    return fields
