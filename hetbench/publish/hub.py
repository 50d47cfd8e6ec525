"""Upload a built folder to the Hugging Face hub (the only place hetbench touches a network)."""

from __future__ import annotations

import re
from pathlib import Path

from hetbench.errors import HetbenchError
from hetbench.contract import read_manifest


def upload_folder(folder: str | Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Create (or reuse) the dataset repo and upload exactly the files the manifest lists
    (:func:`hetbench.publish.published_files.published_paths`); one clear error when offline."""
    from glob import escape

    from hetbench.publish.published_files import published_paths

    manifest = read_manifest(folder)  # refuse anything that is not a hetbench build
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", repo_id):
        raise HetbenchError(f"`repo_id` must look like ORG/NAME (got '{repo_id}')")
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type="dataset",
            commit_message="hetbench build",
            allow_patterns=[escape(p) for p in published_paths(manifest)],
            ignore_patterns=[".*"],
        )
    except Exception as exc:  # network down, no token, no rights: one line, exit 2
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HetbenchError(f"upload to the hub failed ({type(exc).__name__}: {reason[:200]})") from exc
    return getattr(info, "commit_url", None) or f"https://huggingface.co/datasets/{repo_id}"
