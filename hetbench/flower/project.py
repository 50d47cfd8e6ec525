"""The Flower app project of a hetbench run, for Flower's deployment engine (``hetbench flower-app``).

The project is one ``pyproject.toml``: ``[tool.flwr.app.components]`` names hetbench's ServerApp and
ClientApp (``hetbench.flower.server_app:app``, ``hetbench.flower.client_app:app``; hetbench must be
installed, with its ``flower`` extra, wherever the SuperLink and the SuperNodes run) and
``[tool.flwr.app.config]`` carries the job (:class:`~hetbench.flower.job.FlowerJob`: split, algorithm,
options, where the results JSON goes). The commands that run it are in :func:`deployment_commands`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hetbench.flower.job import FlowerJob


def toml_value(value: bool | int | float | str) -> str:
    """One TOML value: a boolean, a number, or a basic string with ``"``, ``\\`` and every control character
    escaped (TOML refuses a raw control character, DEL included, inside a string; JSON leaves DEL raw).

    Parameters
    ----------
    value : bool, int, float or str
        What to write.

    Returns
    -------
    str
        The value as TOML text (``tomllib`` reads back ``value``).

    Raises
    ------
    HetbenchError
        A string holding a lone surrogate (a file name that is not UTF-8), which TOML cannot represent.

    Examples
    --------
    >>> [toml_value(v) for v in (True, 3, 0.05, 1e-06, 'a "b"')]
    ['true', '3', '0.05', '1e-06', '"a \\\\"b\\\\""']
    >>> import tomllib
    >>> tomllib.loads("x = " + toml_value('q"\\\\\\n\\x7fé'))["x"] == 'q"\\\\\\n\\x7fé'
    True
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        from hetbench.errors import HetbenchError

        raise HetbenchError(f"{text.encode('utf-8', 'backslashreplace').decode()!r} is not valid UTF-8; a Flower app "
                            "project (TOML) cannot hold it: rename the split folder")
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", escaped) + '"'


#: the longest app name Flower accepts (``flwr.supercore.utils.is_valid_name``, ``MAX_NAME_LENGTH``)
MAX_NAME = 32


def project_name(job: FlowerJob) -> str:
    """``hetbench-<algo>-<split folder>``, lower case, letters, digits and ``-`` only, at most 32 characters
    as ``flwr run`` requires (a longer name is cut and ends with 8 hex digits of the full one's hash).

    Parameters
    ----------
    job : FlowerJob
        The run.

    Returns
    -------
    str
        The ``[project] name`` of its Flower app.

    Examples
    --------
    >>> project_name(FlowerJob("/x/digits-n4", "fedavg"))
    'hetbench-fedavg-digits-n4'
    >>> name = project_name(FlowerJob("/x/digits-dirichlet-client-a0.5-n4-s0", "fedavg"))
    >>> name.startswith('hetbench-fedavg-digits-'), len(name) <= 32
    (True, True)
    """
    import hashlib

    name = re.sub(r"[^a-z0-9]+", "-", f"hetbench-{job.algo}-{Path(job.split).name}".lower()).strip("-")
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9].rstrip('-')}-{digest}"


def pyproject_text(job: FlowerJob, wait_s: float | None = None, extra: dict | None = None) -> str:
    """The project's ``pyproject.toml`` (``extra``: more ``[tool.flwr.app.config]`` entries, such as those
    :func:`hetbench.flower.simulation.run_flower_simulation` hands its ServerApp)."""
    from hetbench.version import __version__

    config = {**job.to_config(), **(extra or {})}
    if wait_s is not None:
        config["node-wait-s"] = float(wait_s)
    lines = [
        "# A Flower app running hetbench's " + re.sub(r"[^\w+.-]", "_", job.algo) + " on a hetbench split (written by "
        "`hetbench flower-app`).",
        "[build-system]", 'requires = ["hatchling"]', 'build-backend = "hatchling.build"', "",
        "[project]", f'name = "{project_name(job)}"', 'version = "1.0.0"',
        f"description = {toml_value(f'hetbench {job.algo} on {Path(job.split).name} through Flower')}",
        'license = "Apache-2.0"', f'dependencies = ["hetbench[flower]=={__version__}"]', "",
        "[tool.flwr.app]", 'publisher = "hetbench"', "",
        "[tool.flwr.app.components]", 'serverapp = "hetbench.flower.server_app:app"',
        'clientapp = "hetbench.flower.client_app:app"', "",
        "[tool.flwr.app.config]",
        *(f"{key} = {toml_value(value)}" for key, value in config.items()), "",
    ]
    return "\n".join(lines)


def write_app_project(out: str | os.PathLike, job: FlowerJob, overwrite: bool = False,
                      wait_s: float | None = None) -> Path:
    """Write the Flower app project of ``job`` to the folder ``out`` (through a temporary folder renamed into
    place, so it is whole or absent: :func:`hetbench.atomic.atomic_dir`).

    Parameters
    ----------
    out : path
        The project folder (refused when it exists, unless ``overwrite``; refused when it is, lies inside or
        contains the split).
    job : FlowerJob
        The run; its ``results`` path is where the deployed ServerApp writes the results JSON.
    overwrite : bool
        Replace an existing project folder: one whose ``pyproject.toml`` is a hetbench Flower app's (its
        ``[tool.flwr.app]`` has ``publisher = "hetbench"``), or an empty one; any other folder is refused.
    wait_s : float, optional
        How long the ServerApp waits for SuperNodes serving every client (default 300 s).

    Returns
    -------
    Path
        The project folder.

    Examples
    --------
    >>> import tomllib
    >>> job = FlowerJob("/data/split", "scaffold", {"rounds": 2}, {}, "/data/results.json")
    >>> folder = write_app_project("flower_app_example", job)
    >>> app = tomllib.loads((folder / "pyproject.toml").read_text())["tool"]["flwr"]["app"]
    >>> app["components"]["serverapp"], app["config"]["algo"], app["config"]["rounds"]
    ('hetbench.flower.server_app:app', 'scaffold', 2)
    >>> write_app_project("flower_app_example", job, overwrite=True) == folder
    True
    """
    from hetbench.atomic import atomic_dir

    text = pyproject_text(job, wait_s)
    with atomic_dir(out, overwrite, "flower-app", {"--split": job.split}) as tmp:
        (tmp / "pyproject.toml").write_text(text)
    return Path(out)


def deployment_commands(project: str | os.PathLike, num_clients: int, address: str = "127.0.0.1:9093") -> list[str]:
    """The shell commands that run a written project on Flower's deployment engine on one machine: a
    SuperLink, one SuperNode per client (each its own ClientAppIo port), the SuperLink connection in the
    Flower configuration and ``flwr run``, with Flower's telemetry off.

    Examples
    --------
    >>> for line in deployment_commands("app", 2, "127.0.0.1:9093"):
    ...     print(line)
    export FLWR_TELEMETRY_ENABLED=0
    flower-superlink --insecure --port 9093 --disable-runtime-dependency-installation &
    flower-supernode --insecure --superlink 127.0.0.1:9093 --port 9100 --node-config "partition-id=0 num-partitions=2" &
    flower-supernode --insecure --superlink 127.0.0.1:9093 --port 9101 --node-config "partition-id=1 num-partitions=2" &
    printf '[superlink.hetbench]\\naddress = "127.0.0.1:9093"\\ninsecure = true\\n' >> "${FLWR_HOME:-$HOME/.flwr}/config.toml"
    flwr run app hetbench --stream
    """
    port = address.rsplit(":", 1)[-1]
    lines = ["export FLWR_TELEMETRY_ENABLED=0"]  # hetbench makes no network call; Flower's processes would
    lines += [f"flower-superlink --insecure --port {port} --disable-runtime-dependency-installation &"]
    lines += [f'flower-supernode --insecure --superlink {address} --port {9100 + k} --node-config '
              f'"partition-id={k} num-partitions={num_clients}" &' for k in range(num_clients)]
    lines.append(f"printf '[superlink.hetbench]\\naddress = \"{address}\"\\ninsecure = true\\n' >> "
                 '"${FLWR_HOME:-$HOME/.flwr}/config.toml"')
    lines.append(f"flwr run {project} hetbench --stream")
    return lines
