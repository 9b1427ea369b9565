"""Same-op replay of real models: records a few training steps of each model
under peat.torch (every call of the mode's ops), replays every record through
the recorded aten op itself, and prints how many replay EXACT. Playback FI
stands on this: the golden kernel, replayed on what it read, must give what
it wrote, or every candidate's verdict is measured against the wrong baseline.

    /usr/bin/python3 examples/python/replay_fidelity.py [--steps 2] [--out DIR]

Models: the digits CNN and the character LM of the other examples, a
torchvision ResNet-18 (BatchNorm, 32x32 inputs) when torchvision is there,
and a small CNN with BatchNorm.
"""
import argparse
import pathlib
import sys
import tempfile
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import peat  # noqa: E402
import peat.torch as pt  # noqa: E402
from language_chars import CharTransformer  # noqa: E402
from vision_digits import DigitsCNN  # noqa: E402


class BNNet(nn.Module):
    """A small CNN with BatchNorm (running statistics updated in training)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean((2, 3)))


def models():
    g = torch.Generator().manual_seed(0)

    def images(channels, size, batch, classes=10):
        return lambda: (torch.randn(batch, channels, size, size, generator=g),
                        torch.randint(0, classes, (batch,), generator=g))

    def chars():
        x = torch.randint(0, 60, (8, 32), generator=g)
        return x, torch.randint(0, 60, (8, 32), generator=g)

    ce = F.cross_entropy
    yield "digits CNN", DigitsCNN, images(1, 8, 32), ce
    yield ("character LM", lambda: CharTransformer(60, context=32), chars,
           lambda out, y: ce(out.reshape(-1, 60), y.reshape(-1)))
    try:
        import torchvision
        yield ("ResNet-18 (torchvision)", lambda: torchvision.models.resnet18(num_classes=10),
               images(3, 32, 8), ce)
    except ImportError:
        print("torchvision is not installed: ResNet-18 skipped")
    yield "CNN with BatchNorm", BNNet, images(3, 16, 16), ce


def record_and_replay(name, make, batch, loss_fn, steps, out):
    torch.manual_seed(0)
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    path = out / (name.split()[0].lower() + ".peat")
    with peat.Session(seed=1, run_name=name) as s, peat.Profiler(s, path) as prof:
        mode = pt.PeatMode(s, model=model, profiler=prof)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pt.PeatWarning)
            with mode:
                for step in range(steps):
                    mode.set_step(step)
                    x, y = batch()
                    loss = loss_fn(model(x), y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        mode.close()
    with peat.TraceReader(path) as r, peat.Playback(r, candidate=pt.playback_candidate()) as pb:
        summary = pb.run()
        inexact = sorted({res.op for res in pb.results()
                          if res.status_code != 0 or res.bitwise_mismatches})
    return summary, inexact, path.stat().st_size


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--out", type=pathlib.Path, default=None)
    args = ap.parse_args()
    out = args.out or pathlib.Path(tempfile.mkdtemp(prefix="peat-fidelity-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.steps} steps each; "
          f"traces in {out}")
    print(f"{'model':26} {'exact / records':>16} {'trace MB':>9} {'s':>6}  not exact")
    worst = 0
    for name, make, batch, loss_fn in models():
        t0 = time.perf_counter()
        summary, inexact, size = record_and_replay(name, make, batch, loss_fn, args.steps, out)
        print(f"{name:26} {summary.exact:>7} / {summary.selected:<7} {size / 1e6:9.1f} "
              f"{time.perf_counter() - t0:6.1f}  {', '.join(inexact) or '-'}")
        worst = max(worst, summary.selected - summary.exact)
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
