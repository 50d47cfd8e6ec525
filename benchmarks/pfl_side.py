"""pfl-research's side of ``bench_pfl.py``: FedAvg in pfl's simulator on a folder ``bench_pfl.py`` wrote.

Run by the Python of a separate environment that has ``pfl`` (Apple's pfl-research, ``pip install pfl``)
and ``torch``; it never imports hetbench. The model is hetbench's ``DigitsCNN``, loaded by file path from
``hetbench/train/models/digits.py`` (that module imports only torch), with the initial weights
``bench_pfl.py`` saved (``init.pt``).

pfl is used through its own API, the way its documentation builds a simulation:

* the data: ``FederatedDataset.from_slices(users, MinimizeReuseUserSampler(ids))``, one user dataset
  (``pfl.data.dataset.Dataset`` of a float32 image tensor and an int64 label tensor) per (round, selected
  client), its rows in the order hetbench's ``epoch_batches`` deals them, so pfl's ``Dataset.iter``
  (consecutive slices of ``local_batch_size``) gives the same mini-batches; the sampler walks the ids in
  order, so each round's cohort is the clients hetbench's ``select_uniform`` picks, in its order;
* the model: ``pfl.model.pytorch.PyTorchModel`` around the module (``loss``: mean cross-entropy;
  ``metrics``: summed loss and correct count as ``Weighted``), ``torch.optim.SGD`` for the clients and
  ``torch.optim.SGD(lr=1.0)`` as the central optimiser (FedAvg: the model plus the average update);
* the algorithm: ``FederatedAveraging`` with ``NNAlgorithmParams`` (cohort size = clients per round, no
  validation cohort) and ``NNTrainHyperParams`` (lr, one epoch, batch size), run on a
  ``SimulatedBackend`` whose postprocessor ``WeightByDatapoints`` weights each update by its n_k (hetbench
  weights by n_k too).

``evaluation_frequency`` is set past the last round, so pfl's per-user metrics before and after local
training (an evaluation of the user's own data, twice per client) run only in round 1, which the benchmark
leaves out as warm-up. The global model is evaluated on the test rows (batches of 256) every
``eval_every`` rounds (meta.json) and after the last, inside a callback; at the end of that callback, in every
round, it stamps ``time.perf_counter()`` and ``time.process_time()`` (this process's CPU time), so the
span between two stamps is everything pfl does for one round (its context, the cohort's local training,
aggregation, the central update, its metrics and platform output) plus, in an evaluated round, the
evaluation. The stamps, the curve and the final parameters (flattened in ``model.parameters()`` order) go
to ``--out``.

Usage (as ``bench_pfl.py`` runs it)::

    /tmp/pfl-venv/bin/python benchmarks/pfl_side.py --data DIR --out DIR
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIGITS_PY = HERE.parent / "hetbench" / "train" / "models" / "digits.py"


def load_digits_module(path: Path = DIGITS_PY):
    """hetbench's ``digits.py``, loaded by file path (not through the hetbench package)."""
    spec = importlib.util.spec_from_file_location("hetbench_digits_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the folder bench_pfl.py wrote (arrays.npz, init.pt, meta.json)")
    ap.add_argument("--out", required=True, help="where the stamps, curve and final parameters go")
    ap.add_argument("--model-py", default=str(DIGITS_PY), help="the file defining DigitsCNN")
    args = ap.parse_args(argv)

    os.environ.setdefault("PFL_PYTORCH_DEVICE", "cpu")  # read by pfl when it picks its device
    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)

    from pfl.version import __version__ as pfl_version
    from pfl.aggregate.simulate import SimulatedBackend
    from pfl.aggregate.weighting import WeightByDatapoints
    from pfl.algorithm import FederatedAveraging, NNAlgorithmParams
    from pfl.callback.base import TrainingProcessCallback
    from pfl.data.dataset import Dataset
    from pfl.data.federated_dataset import FederatedDataset
    from pfl.data.sampling import MinimizeReuseUserSampler
    from pfl.hyperparam import NNEvalHyperParams, NNTrainHyperParams
    from pfl.metrics import Metrics, Weighted
    from pfl.model.pytorch import PyTorchModel

    data_dir, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = json.loads((data_dir / "meta.json").read_text())
    arrays = np.load(data_dir / "arrays.npz")
    x_train, y_train = torch.from_numpy(arrays["x_train"]), torch.from_numpy(arrays["y_train"])
    x_test, y_test = torch.from_numpy(arrays["x_test"]), torch.from_numpy(arrays["y_test"])
    rows, offsets = arrays["rows"], arrays["offsets"]
    rounds, per_round, eval_every = int(meta["rounds"]), int(meta["per_round"]), int(meta["eval_every"])

    digits = load_digits_module(Path(args.model_py))

    class PflDigitsCNN(digits.DigitsCNN):
        """DigitsCNN with the ``loss`` and ``metrics`` methods pfl's PyTorchModel calls."""

        def loss(self, x, y):
            return F.cross_entropy(self(x), y)

        @torch.no_grad()
        def metrics(self, x, y):
            logits = self(x)
            n = int(y.numel())
            return {"loss": Weighted(float(F.cross_entropy(logits, y, reduction="sum")), n),
                    "accuracy": Weighted(float((logits.argmax(1) == y).sum()), n)}

    torch_model = PflDigitsCNN(int(meta["in_channels"]), int(meta["num_classes"]), int(meta["image_size"]))
    torch_model.load_state_dict(torch.load(data_dir / "init.pt"))

    # one user per (round, selected client), rows in hetbench's batch order; untimed set-up
    users = []
    for i in range(rounds * per_round):
        idx = torch.from_numpy(rows[offsets[i]:offsets[i + 1]])
        users.append((x_train.index_select(0, idx), y_train.index_select(0, idx)))
    train_data = FederatedDataset.from_slices(users, MinimizeReuseUserSampler(list(range(len(users)))))
    test_set = Dataset((x_test, y_test))
    eval_params = NNEvalHyperParams(local_batch_size=256)

    class StampAndEvaluate(TrainingProcessCallback):
        """Central test accuracy every ``eval_every`` rounds and after the last; a clock stamp per round."""

        def __init__(self) -> None:
            self.stamps: list[float] = []
            self.cpu_stamps: list[float] = []
            self.curve: list[tuple[int, float]] = []
            self.eval_s = 0.0

        def on_train_begin(self, *, model):
            self.start = time.perf_counter()
            return Metrics()

        def after_central_iteration(self, aggregate_metrics, model, *, central_iteration):
            r = central_iteration + 1
            if r % eval_every == 0 or r == rounds:
                t0 = time.perf_counter()
                acc = model.evaluate(test_set, eval_params=eval_params).to_simple_dict(to_lowercase=True)["accuracy"]
                self.curve.append((r, round(100.0 * float(acc), 4)))
                self.eval_s += time.perf_counter() - t0
            self.stamps.append(time.perf_counter())
            self.cpu_stamps.append(time.process_time())
            return False, Metrics()

    model = PyTorchModel(model=torch_model, local_optimizer_create=torch.optim.SGD,
                         central_optimizer=torch.optim.SGD(torch_model.parameters(), lr=1.0))
    backend = SimulatedBackend(training_data=train_data, val_data=None, postprocessors=[WeightByDatapoints()])
    algorithm_params = NNAlgorithmParams(central_num_iterations=rounds, evaluation_frequency=rounds + 1,
                                         train_cohort_size=per_round, val_cohort_size=None)
    train_params = NNTrainHyperParams(local_learning_rate=float(meta["lr"]),
                                      local_num_epochs=int(meta["local_epochs"]),
                                      local_batch_size=int(meta["batch_size"]))
    timer = StampAndEvaluate()
    t0 = time.perf_counter()
    FederatedAveraging().run(algorithm_params=algorithm_params, backend=backend, model=model,
                             model_train_params=train_params, model_eval_params=eval_params, callbacks=[timer])
    wall = time.perf_counter() - t0

    params = torch.cat([p.detach().reshape(-1) for p in torch_model.parameters()])
    np.save(out / "params.npy", params.numpy())
    (out / "pfl.json").write_text(json.dumps({
        "stamps": timer.stamps, "cpu_stamps": timer.cpu_stamps, "start": timer.start, "curve": timer.curve,
        "eval_s": timer.eval_s, "wall_s": wall, "pfl": pfl_version, "torch": torch.__version__,
        "threads": torch.get_num_threads(), "python": sys.version.split()[0],
    }))


if __name__ == "__main__":
    main()
