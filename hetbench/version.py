"""The hetbench version, recorded in every manifest and results file."""

__version__ = "0.1.0"
