"""Recipes and frozen manifests shipped with hetbench (``hetbench.manifests``)."""
