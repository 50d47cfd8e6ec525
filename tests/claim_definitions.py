"""The shipped claim definitions as plain yaml data, for tests that edit one and check it is refused."""

from __future__ import annotations

from importlib import resources


def raw_claim(claim_id: str) -> dict:
    """``manifests/claims/<claim_id>.yaml`` as parsed yaml (not validated), a fresh copy each call."""
    import yaml

    text = resources.files("hetbench.manifests").joinpath("claims", f"{claim_id}.yaml").read_text()
    return yaml.safe_load(text)
