"""peat.torch under torch.distributed: rank handling, one trace per rank, and
the DDP gradient all-reduce recorded (and swappable) like a kernel.

    import peat.torch as pt
    with pt.RankRecorder("run/ddp") as rec:           # run/ddp.rank<r>.peat
        model = DDP(net)
        pt.AllReduceHook(rec.profiler).register(model) # records every bucket
        mode = pt.PeatMode(rec.session, model=net, profiler=rec.profiler)
        with mode:
            for step, (x, y) in enumerate(data):
                mode.set_step(step)                    # step marker: ranks line up
                ...; opt.step()
                rec.record_parameters(net, step)       # checkpoint: ranks must agree

Rank, world size and local rank come from torch.distributed when it is
initialised, else from the RANK / WORLD_SIZE / LOCAL_RANK variables that
torchrun and srun wrappers set. The run id, which `peat compare` and
`peat playback` use to refuse traces of different runs mixed together, is
PEAT_RUN_ID, else torchrun's TORCHELASTIC_RUN_ID, else a fresh one; with
torch.distributed initialised rank 0's id is broadcast, so all ranks agree.
It goes into the trace header's tags as "run_id" (with "local_rank").

The all-reduce hook records, per bucket and step, the op "ddp/c10d::allreduce"
(module path "bucket<i>"): input this rank's gradient bucket before the
collective, output the averaged bucket after it. A candidate all-reduce
(gather_allreduce: another reduction order, which is ROUNDING; or a buggy one)
can be swapped in; the golden is torch.distributed.all_reduce.
"""
from __future__ import annotations

import dataclasses
import os
import uuid

import torch
import torch.distributed as dist

from .profiler import Profiler
from .session import Session

#: The op name of a recorded gradient-bucket all-reduce.
ALLREDUCE_OP = "ddp/c10d::allreduce"


@dataclasses.dataclass(frozen=True)
class RankInfo:
    rank: int
    world_size: int
    local_rank: int
    run_id: str


def _initialised() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank_info(run_id: str | None = None) -> RankInfo:
    """This process's rank, world size, local rank and the run id (see the
    module docstring for where each comes from)."""
    if _initialised():
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if not 0 <= rank < world:
        raise ValueError(f"peat: rank {rank} is not in [0, world size {world})")
    local = int(os.environ.get("LOCAL_RANK", rank))
    rid = run_id or os.environ.get("PEAT_RUN_ID") or os.environ.get("TORCHELASTIC_RUN_ID")
    if rid in (None, "", "none"):  # torchrun's default rdzv id is "none": not a run's own id
        rid = uuid.uuid4().hex
    if _initialised() and world > 1:
        box = [rid]
        dist.broadcast_object_list(box, src=0)
        rid = box[0]
    return RankInfo(rank, world, local, str(rid))


def rank_trace_path(prefix, rank: int) -> str:
    """The naming rule of per-rank traces: "<prefix>.rank<r>.peat"."""
    return f"{prefix}.rank{rank}.peat"


class RankRecorder:
    """A Session (rank and world size set) and a Profiler writing
    rank_trace_path(prefix, rank), tagged with the run id and local rank.
    Extra keyword arguments go to peat.Profiler."""

    def __init__(self, prefix, *, info: RankInfo | None = None, seed: int = 0x5EA7, tags: dict | None = None,
                 **profiler_options):
        self.info = info or rank_info()
        self.path = rank_trace_path(prefix, self.info.rank)
        d = os.path.dirname(self.path)
        if d:
            os.makedirs(d, exist_ok=True)
        self.session = Session(seed=seed, rank=self.info.rank, world_size=self.info.world_size)
        all_tags = {"run_id": self.info.run_id, "local_rank": str(self.info.local_rank), **(tags or {})}
        self.profiler = Profiler(self.session, self.path, tags=all_tags, **profiler_options)

    def record_parameters(self, model, step: int) -> None:
        """A checkpoint record "parameters" of the model's parameters at `step`
        (after the optimizer step): in data-parallel training every rank
        holds the same ones, which `peat compare` checks."""
        tensors = {name: p.detach() for name, p in model.named_parameters()}
        self.profiler.record_checkpoint("parameters", tensors, step=step)

    def close(self) -> None:
        self.profiler.close()
        self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def gather_allreduce(order: str = "reversed", drop_rank: int | None = None):
    """A candidate all-reduce: every rank all-gathers the buckets and sums them
    itself, in rank order reversed ("reversed") or "forward" -- another
    reduction order than the golden's, so a ROUNDING difference from three
    ranks on. drop_rank
    leaves that rank's bucket out: a buggy collective. Returns
    allreduce(tensor, group) -> torch.futures.Future of the summed tensor
    (in place)."""
    def allreduce(tensor, group):
        world = dist.get_world_size(group)
        parts = [torch.empty_like(tensor) for _ in range(world)]
        dist.all_gather(parts, tensor, group=group)
        ranks = list(range(world))[::-1] if order == "reversed" else list(range(world))
        acc = torch.zeros_like(tensor)
        for r in ranks:
            if r != drop_rank:
                acc += parts[r]
        tensor.copy_(acc)
        fut = torch.futures.Future()
        fut.set_result(tensor)
        return fut
    return allreduce


def _golden_allreduce(tensor, group):
    return dist.all_reduce(tensor, group=group, async_op=True).get_future()


class AllReduceHook:
    """A DDP communication hook (hook.register(ddp_model)):
    averages each gradient bucket over the ranks, as DDP's default does, with
    `allreduce` (default torch.distributed.all_reduce; a candidate such as
    gather_allreduce()), and, when `profiler` is given, records the bucket
    before and after as ALLREDUCE_OP (every `record_every`-th step's
    buckets)."""

    def __init__(self, profiler: Profiler | None = None, *, allreduce=None, process_group=None,
                 record_every: int = 1):
        self.profiler = profiler
        self.allreduce = allreduce or _golden_allreduce
        self.group = process_group
        self.record_every = max(1, int(record_every))
        self.calls = 0

    def register(self, ddp_model):
        """Registers the hook on a DistributedDataParallel model; returns self."""
        ddp_model.register_comm_hook(None, self.hook)  # a bound method: DDP reads its name
        return self

    def __call__(self, state, bucket):
        return self.hook(state, bucket)

    def hook(self, state, bucket):
        buf = bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()
        index = bucket.index() if hasattr(bucket, "index") else bucket.get_index()
        group = self.group if self.group is not None else dist.group.WORLD
        world = dist.get_world_size(group)
        step = self.profiler.session.step if self.profiler is not None else 0
        record = self.profiler is not None and step % self.record_every == 0
        before = buf.detach().clone() if record else None
        self.calls += 1
        buf.div_(world)
        fut = self.allreduce(buf, group)

        def done(f):
            value = f.value()
            out = value[0] if isinstance(value, (list, tuple)) else value
            if record:
                self.profiler.record_op(ALLREDUCE_OP, inputs={"bucket": before}, outputs={"averaged": out},
                                        module_path=f"bucket{index}", phase="backward", step=step,
                                        attrs={"bucket": int(index), "world_size": int(world)})
            return out
        return fut.then(done)


def distributed_playback(reader, candidate, *, group=None, dst: int = 0, **playback_options):
    """Playback of one trace spread over the ranks of a torch.distributed
    group: every rank replays its share (the library's partition), rank `dst`
    gathers the shares' results (torch.distributed.gather_object) and merges
    them (peat_playback_import). Returns the merged, run peat.Playback on rank
    `dst` -- the same results as one process replaying everything -- and None
    elsewhere. Outside torch.distributed it is a plain playback."""
    from .playback import Playback
    if _initialised():
        rank, world = dist.get_rank(group), dist.get_world_size(group)
    else:
        rank, world = 0, 1
    pb = Playback(reader, candidate=candidate, partition=(rank, world), **playback_options)
    pb.run()
    if world == 1:
        return pb
    parts = [None] * world if rank == dst else None
    dist.gather_object(pb.export_results(), parts, dst=dst, group=group)
    if rank != dst:
        pb.close()
        return None
    for r, part in enumerate(parts):
        if r != dst:
            pb.import_results(part)
    return pb
