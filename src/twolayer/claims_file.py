"""The format of a reproduction's ``claims.json`` (written by the report, read by the explorer and the docs).

Format 2: ``{"format": 2, "ledger": {paper: {category: count}}, "claims": [record, ...]}``, a record being
``twolayer.claims.Claim.to_dict()``. Format 1, which earlier versions wrote, was the bare list of records.
"""

from __future__ import annotations

CLAIMS_FORMAT = 2


def claim_records(document: dict | list) -> list[dict]:
    """The claim records of a parsed ``claims.json``: format 2's ``claims``, or the bare list of format 1."""
    if isinstance(document, list):
        return document
    if not isinstance(document, dict) or not isinstance(document.get("claims"), list):
        raise ValueError("claims.json: expected {'format', 'ledger', 'claims': [...]} or a list of claim records")
    return document["claims"]
