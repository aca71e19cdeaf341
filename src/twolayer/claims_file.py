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


# (row class, mark class, wording) of a claim expected to fail, when it held: a finding that holds again, or an
# assumption-broken claim that holds; and when it failed, as expected
EXPECTED_FAILURES = {
    "finding": (("failed", "fail", "✗ holds now: no longer a finding"),
                ("as-expected", "finding-mark", "◆ finding: the paper's statement fails here")),
    "broken": (("finding", "fail", "✗ holds although an assumption is broken"),
               ("as-expected", "pass", "✓ fails, as the theory says")),
}


def verdict(record: dict) -> tuple[str, str, str]:
    """``(row class, mark class, wording)`` of a claim record (``Claim.to_dict()``: ``kind``, ``expect``,
    ``evaluated``, ``passed``), as the report and the explorer both show it: a claim expected to fail
    (``expect: fail``: a finding, or a claim of an assumption-broken experiment) that fails is as expected."""
    passed = bool(record.get("passed"))
    if record.get("expect", "pass") == "fail":
        if not record.get("evaluated", True):
            return "failed", "fail", "✗ not evaluated"
        held, failed = EXPECTED_FAILURES["finding" if record.get("kind") == "finding" else "broken"]
        return held if passed else failed
    return ("passed", "pass", "✓ pass") if passed else ("failed", "fail", "✗ fail")
