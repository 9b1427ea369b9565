#!/usr/bin/env python3
"""Data-parallel training under PEAT: an MLP on scikit-learn's digits trained
with DistributedDataParallel (gloo on the CPU, NCCL on GPUs), one trace per
rank, then playback on every rank and a cross-rank check.

    PEAT_LIBRARY=build/lib/libpeat.so PYTHONPATH=bindings/python \\
      /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 \\
        examples/python/ddp_digits.py --out /tmp/ddp --peat build/tools/peat/peat

 1. Recording: every rank records its GEMMs (PeatMode), a step marker per
    step, the gradient buckets around each all-reduce (AllReduceHook, a DDP
    communication hook) and its parameters after each optimizer step, into
    <out>/ddp.rank<r>.peat, tagged with the run id torchrun gave the job.
    --allreduce reversed swaps in a candidate all-reduce that sums in another
    order (every rank the same order: ROUNDING, ranks stay identical);
    --allreduce own makes each rank sum in its own order, so the ranks'
    gradients differ in their last bits and the parameters drift apart: the
    cross-rank check names where; --allreduce drop is a buggy collective that
    leaves the last rank's bucket out (the same on every rank): the ranks
    agree, and the check of the collective against the mean of the recorded
    buckets finds it is no rounding difference.
 2. Playback: each rank replays its own trace's GEMMs against a bf16 candidate
    (peat.torch.replay) and prints the Detector's verdict per op; then rank
    0's trace is replayed by all ranks, each its share of the records
    (peat.torch.distributed_playback: the library's partition), and merged
    on rank 0.
 3. Cross-rank check: rank 0 runs `peat compare --ranks` over all rank traces
    (when --peat gives the tool): parameters and all-reduced gradients must
    agree; the first step, op and rank that diverge are named; and the
    recorded all-reduce is checked against the mean of the ranks' recorded
    buckets (the Detector's verdict on the collective).
"""
import argparse
import datetime
import os
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.nn.parallel import DistributedDataParallel as DDP

import peat
import peat.torch as pt


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def own_order_allreduce(tensor, group):
    """A candidate all-reduce in which every rank sums in its own order
    (starting at itself): the ranks' results differ in the last bits."""
    world, me = dist.get_world_size(group), dist.get_rank(group)
    parts = [torch.empty_like(tensor) for _ in range(world)]
    dist.all_gather(parts, tensor, group=group)
    acc = torch.zeros_like(tensor)
    for k in range(world):
        acc += parts[(me + k) % world] * (1.0 + 1e-6 * k * me)  # order and scaling differ per rank
    tensor.copy_(acc)
    fut = torch.futures.Future()
    fut.set_result(tensor)
    return fut


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="ddp_out")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--allreduce", choices=["golden", "reversed", "own", "drop"], default="golden")
    ap.add_argument("--peat", help="the peat tool, for the cross-rank check")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds a collective may wait for the other ranks before this rank fails (default 300)")
    args = ap.parse_args()

    # A bounded wait: a rank whose peer died fails instead of waiting forever.
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    torch.manual_seed(0)  # the same initial model on every rank
    torch.set_num_threads(1)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x, dtype=torch.float32) / 16.0
    y = torch.tensor(y)
    info = pt.rank_info()
    # this rank's shard of the data (what a DistributedSampler gives)
    x, y = x[info.rank::info.world_size], y[info.rank::info.world_size]

    net = MLP()
    model = DDP(net)
    candidate = {"golden": None, "reversed": pt.gather_allreduce("reversed"), "own": own_order_allreduce,
                 "drop": pt.gather_allreduce("forward", drop_rank=info.world_size - 1)}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    prefix = os.path.join(args.out, "ddp")
    with pt.RankRecorder(prefix, info=info, framework=f"pytorch {torch.__version__}") as rec:
        pt.AllReduceHook(rec.profiler, allreduce=candidate[args.allreduce]).register(model)
        mode = pt.PeatMode(rec.session, model=net, profiler=rec.profiler)
        with mode:
            for step in range(args.steps):
                mode.set_step(step)
                lo = (step * args.batch) % (len(x) - args.batch)
                loss = F.cross_entropy(model(x[lo:lo + args.batch]), y[lo:lo + args.batch])
                opt.zero_grad()
                loss.backward()
                opt.step()
                rec.profiler.record_scalar("loss", float(loss), step=step)
                rec.record_parameters(net, step)
        mode.close()
        print(f"rank {info.rank}/{info.world_size}: recorded {rec.path} (run {info.run_id}), "
              f"last loss {float(loss):.4f}", flush=True)
    dist.barrier()

    # -- playback of this rank's GEMMs against a bf16 candidate --
    with peat.TraceReader(rec.path) as reader:
        sigs = pt.replay(reader, "*aten::addmm", pt.replay_candidate(pt.autocast_candidate(torch.bfloat16)))
        verdicts = {name: peat.detect(sig, op_kind="gemm").verdicts[0].model for name, sig in sigs.items()}
    print(f"rank {info.rank}: playback bf16: " + ", ".join(f"{n} {v}" for n, v in sorted(verdicts.items())),
          flush=True)

    # -- rank 0's trace replayed by all ranks, each its share, merged on rank 0 --
    with peat.TraceReader(pt.rank_trace_path(prefix, 0)) as reader:
        pb = pt.distributed_playback(reader, pt.playback_candidate(pt.autocast_candidate(torch.bfloat16)),
                                     op_glob="*aten::addmm")
        if pb is not None:
            s = pb.summary()
            print(f"rank 0: rank 0's trace replayed over {info.world_size} ranks: {s.done} records merged, "
                  f"{s.mismatched} differ from golden", flush=True)
            pb.close()
    dist.barrier()

    # -- cross-rank check on rank 0 --
    code = 0
    if info.rank == 0 and args.peat:
        traces = [pt.rank_trace_path(prefix, r) for r in range(info.world_size)]
        p = subprocess.run([args.peat, "compare", "--ranks", *traces], capture_output=True, text=True)
        print(p.stdout.strip() or p.stderr.strip(), flush=True)
        code = p.returncode
    dist.destroy_process_group()
    # Leave without the interpreter's teardown: on torch 1.13 the DDP reducer's
    # destructor joins a gloo thread that waits for the GIL the exiting main
    # thread holds, and the rank hangs at exit (seen with a Python comm hook).
    # Every trace is closed and every line flushed by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if args.allreduce == "golden" else 0)


if __name__ == "__main__":
    main()
