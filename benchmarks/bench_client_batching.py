"""Does training a round's clients together with ``torch.func`` pay on this machine?

The issue asked to evaluate batching clients that share a model and a number of steps (FedVC makes them
equal) with ``functional_call`` + ``vmap`` and to keep it if it pays. This times K clients taking one SGD
step each on their own batch of B images: one after another (what ``hetbench train`` does, per worker
thread), as one vmapped step over the stacked client models, and, as a lower bound, one ordinary step on a
single batch of K * B images. Prints the times and the ratio sequential / vmap (> 1 means vmap pays).

    python benchmarks/bench_client_batching.py [--clients 10] [--batch 10] [--repeats 20]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from hetbench.train.models import build_model


def time_it(fn, repeats: int) -> float:
    fn()
    fn()
    t = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t) / repeats


def case(model_name: str, channels: int, side: int, k: int, b: int, repeats: int) -> tuple[float, float, float]:
    torch.manual_seed(0)
    model = build_model(model_name, channels, 10, side)
    x = torch.randn(k, b, channels, side, side)
    y = torch.randint(0, 10, (k, b))
    params = {n: p.detach() for n, p in model.named_parameters()}
    stacked = {n: p.unsqueeze(0).repeat(k, *[1] * p.dim()).clone() for n, p in params.items()}

    def loss_of(p, xb, yb):
        return F.cross_entropy(functional_call(model, p, (xb,)), yb)

    cohort_grad = vmap(grad(loss_of))

    def vmapped():
        g = cohort_grad(stacked, x, y)
        for n in stacked:
            stacked[n].sub_(0.01 * g[n])

    plist = list(model.parameters())

    def sequential():
        for i in range(k):
            gs = torch.autograd.grad(F.cross_entropy(model(x[i]), y[i]), plist)
            with torch.no_grad():
                for p, g in zip(plist, gs):
                    p.sub_(0.01 * g)

    def one_batch():
        gs = torch.autograd.grad(F.cross_entropy(model(x.reshape(k * b, channels, side, side)), y.reshape(-1)), plist)
        with torch.no_grad():
            for p, g in zip(plist, gs):
                p.sub_(0.01 * g)

    return time_it(sequential, repeats), time_it(vmapped, repeats), time_it(one_batch, repeats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    print(f"{args.clients} clients x batch {args.batch}, one SGD step each; ms per step of all clients")
    print(f"{'model':<22}{'threads':>8}{'sequential':>12}{'vmap':>10}{'one batch':>11}{'seq/vmap':>10}")
    for threads in sorted({1, torch.get_num_threads()}):
        torch.set_num_threads(threads)
        for name, c, side in (("lenet", 1, 28), ("lenet", 3, 32), ("digits-cnn", 1, 8)):
            seq, vm, one = case(name, c, side, args.clients, args.batch, args.repeats)
            print(f"{name + f' {side}x{side}x{c}':<22}{threads:>8}{seq * 1e3:>12.1f}{vm * 1e3:>10.1f}{one * 1e3:>11.1f}"
                  f"{seq / vm:>9.2f}x")


if __name__ == "__main__":
    main()
