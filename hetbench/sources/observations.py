"""A generated citizen-science observation table: the embedded default of the geo and user builders.

It mimics how iNaturalist-style data arise (Hsu et al. 2020, sec. 4; Van Horn et al. 2018):

* observers live around a few dozen population centres (a mixture of Gaussians on the sphere) and
  their activity is heavy-tailed (Pareto), so a few observers contribute most observations;
* each observation is made near the observer's home (mostly within ~50 km, sometimes on a trip);
* species have geographic ranges (a centre and a radius) and heavy-tailed abundance; the species of
  an observation is drawn in proportion to abundance x a Gaussian range kernel at that location.

Every number comes from the seed; nothing is downloaded. The result is plainly synthetic and the
dataset card says so. ``builtin:observations`` (:func:`hetbench.sources.builtins.load_observations`)
is :func:`observations_dataset` with the defaults.

References
----------
.. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated Visual Classification with Real-World Data
   Distribution", ECCV 2020, section 4.
.. [2] G. Van Horn et al., "The iNaturalist Species Classification and Detection Dataset", CVPR 2018.
"""

from __future__ import annotations

import numpy as np

from hetbench.seeding import make_rng

EARTH_KM_PER_DEG = 111.2


def _wrap_lon(lon: np.ndarray) -> np.ndarray:
    return (lon + 180.0) % 360.0 - 180.0


def generate_observations(
    num_observations: int = 20_000,
    num_observers: int = 600,
    num_species: int = 80,
    num_centres: int = 30,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Columns ``obs_id, species, observer, latitude, longitude`` (numpy arrays, one row each).

    Parameters
    ----------
    num_observations, num_observers, num_species, num_centres : int
        Rows, observers, species and population centres.
    seed : int
        Seed of every number.

    Returns
    -------
    dict of numpy.ndarray
        One array per column, ``num_observations`` rows each.

    Examples
    --------
    >>> from hetbench.sources.observations import generate_observations
    >>> cols = generate_observations(num_observations=5, num_observers=3, num_species=4, num_centres=2)
    >>> cols["obs_id"].tolist(), sorted(cols)
    (['obs-0', 'obs-1', 'obs-2', 'obs-3', 'obs-4'], ['latitude', 'longitude', 'obs_id', 'observer', 'species'])
    """
    rng = make_rng(seed, 4242)
    # population centres: mid latitudes weighted towards the northern hemisphere, like the real data
    c_lat = np.clip(rng.normal(25.0, 25.0, num_centres), -55.0, 70.0)
    c_lon = rng.uniform(-180.0, 180.0, num_centres)
    c_weight = rng.pareto(1.2, num_centres) + 0.2
    # observers: home near a centre, Pareto activity
    centre = rng.choice(num_centres, size=num_observers, p=c_weight / c_weight.sum())
    h_lat = np.clip(c_lat[centre] + rng.normal(0.0, 2.0, num_observers), -85.0, 85.0)
    h_lon = _wrap_lon(c_lon[centre] + rng.normal(0.0, 2.0, num_observers))
    activity = rng.pareto(1.6, num_observers) + 0.05
    # species: range centres near population centres (observed where people are), radius, abundance
    s_centre = rng.choice(num_centres, size=num_species, p=c_weight / c_weight.sum())
    s_lat = np.clip(c_lat[s_centre] + rng.normal(0.0, 8.0, num_species), -80.0, 80.0)
    s_lon = _wrap_lon(c_lon[s_centre] + rng.normal(0.0, 8.0, num_species))
    s_radius = rng.uniform(3.0, 25.0, num_species)  # degrees
    abundance = rng.pareto(1.8, num_species) + 0.05
    # observations
    who = rng.choice(num_observers, size=num_observations, p=activity / activity.sum())
    trip = rng.random(num_observations) < 0.07
    spread = np.where(trip, 6.0, 0.45)
    lat = np.clip(h_lat[who] + rng.normal(0.0, 1.0, num_observations) * spread, -89.0, 89.0)
    lon = _wrap_lon(h_lon[who] + rng.normal(0.0, 1.0, num_observations) * spread / np.cos(np.radians(lat)).clip(0.2))
    # species by abundance x range kernel (great-circle-ish distance in degrees), inverse-CDF sampling
    dlat = lat[:, None] - s_lat[None, :]
    dlon = _wrap_lon(lon[:, None] - s_lon[None, :]) * np.cos(np.radians(lat))[:, None]
    d2 = dlat * dlat + dlon * dlon
    w = abundance[None, :] * np.exp(-0.5 * d2 / (s_radius[None, :] ** 2)) + 1e-12
    cdf = np.cumsum(w, axis=1)
    u = rng.random(num_observations) * cdf[:, -1]
    species = (cdf < u[:, None]).sum(axis=1)
    width = len(str(num_observations - 1))
    return {
        "obs_id": np.array([f"obs-{i:0{width}d}" for i in range(num_observations)]),
        "species": np.array([f"species-{s:03d}" for s in species]),
        "observer": np.array([f"observer-{o:04d}" for o in who]),
        "latitude": np.round(lat, 5),
        "longitude": np.round(lon, 5),
    }


def observations_dataset(seed: int = 0, **kwargs):
    """The generated table (:func:`generate_observations`) as a ``datasets.Dataset``.

    Parameters
    ----------
    seed : int
        Seed of every number.
    **kwargs
        Sizes passed on to :func:`generate_observations`.

    Examples
    --------
    >>> from hetbench.sources.observations import observations_dataset
    >>> observations_dataset(num_observations=10).column_names
    ['obs_id', 'species', 'observer', 'latitude', 'longitude']
    """
    import datasets

    cols = generate_observations(seed=seed, **kwargs)
    return datasets.Dataset.from_dict({k: v.tolist() for k, v in cols.items()})
