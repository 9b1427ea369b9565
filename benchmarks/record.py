#!/usr/bin/env python3
"""Appends one benchmark result to benchmarks/results/<benchmark>.jsonl.

  record.py BENCHMARK --metric NAME --value V --unit U [--baseline B] [--ratio R]
            [--target T] [--note TEXT]

Adds date (UTC, ISO 8601), commit (git HEAD, '-dirty' when the tree has
changes), and machine (CPU model and core count), as DESIGN.md §9 asks, and
prints the line it wrote.
"""
import argparse
import datetime
import json
import os
import pathlib
import subprocess


def cpu_model() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def commit(repo: pathlib.Path) -> str:
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("benchmark")
    parser.add_argument("--metric", required=True)
    parser.add_argument("--value", required=True, type=float)
    parser.add_argument("--unit", required=True)
    parser.add_argument("--baseline", type=float)
    parser.add_argument("--ratio", type=float)
    parser.add_argument("--target")
    parser.add_argument("--note")
    args = parser.parse_args()

    here = pathlib.Path(__file__).resolve().parent
    record = {
        "metric": args.metric,
        "value": args.value,
        "unit": args.unit,
        "baseline": args.baseline,
        "ratio": args.ratio,
        "target": args.target,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(here.parent),
        "machine": f"{cpu_model()}, {os.cpu_count()} cores",
    }
    if args.note:
        record["note"] = args.note
    results = here / "results"
    results.mkdir(exist_ok=True)
    line = json.dumps(record)
    with open(results / f"{args.benchmark}.jsonl", "a") as out:
        out.write(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
