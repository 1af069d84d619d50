"""A loop of small PyTorch operations on the GPU: what a tracer costs when the
host's launch path is the work (benchmarks/cuda/run.sh), and a kernel count to
compare with torch.profiler's (tests/gpu/cuda_api_test.cpp).

    python3 torch_small_ops.py [--ops N] [--warmup N] [--profiler] [--stack] [--workload W]

--workload elementwise (default): each step is `x = x * 0.999 + 0.001` on 4096
floats: two elementwise kernels, each allocating its result from PyTorch's
caching allocator. After the loop one reduction and its 4-byte copy to the
host (`.item()`).
--workload train: each step is one training step of a small MLP (256 -> 256 ->
10, batch 64: forward, cross-entropy, backward, SGD), some 20 kernels; "ops"
counts steps.
--stack: torch.profiler with with_stack=True (Python call paths, the context
ferret gives GPU work by default).

Prints
    result mode=<bare|profiler> per_op_us=<µs per operation> ops=<2 * steps> timed_s=<s>
    expected {"loop kernels": 2 * steps, "step kernels": 2 * (warm-up + timed steps)}
and with --profiler, where torch.profiler records the whole script (tensor
creation, warm-up, loop, reduction; its own start and stop are not timed):
    torch-profiler {"kernels": <kernel events in its chrome trace>, ...}
Run under ferret-run for ferret's numbers: the script does not know ferret.
"""
import argparse
import json
import os
import tempfile
import time

import torch

ELEMENTS = 4096


def launches_per_step():
    return 2  # a multiplication and an addition


def run_training(steps, warmup):
    """Training steps of a small MLP; returns the seconds the timed steps took."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(64, 256, device="cuda")
    labels = torch.randint(0, 10, (64,), device="cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if not loss.item() > 0:
        raise SystemExit("torch_small_ops.py: the loss is not positive")
    return seconds


def run(steps, warmup):
    """The work; returns the seconds the timed loop took."""
    x = torch.ones(ELEMENTS, device="cuda")  # one fill kernel
    for _ in range(warmup):
        x = x * 0.999 + 0.001
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        x = x * 0.999 + 0.001
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    total = x.sum().item()  # a reduction kernel and a 4-byte copy back
    if not total > 0:
        raise SystemExit(f"torch_small_ops.py: the sum is {total}, expected > 0")
    return seconds


def kernels_in_profiler_trace(profile):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        profile.export_chrome_trace(path)
        with open(path) as trace:
            events = json.load(trace)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy" and e.get("ph") == "X"]
    return len(kernels), len(copies)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=20000, help="operations timed (2 per step)")
    parser.add_argument("--warmup", type=int, default=200, help="untimed steps before")
    parser.add_argument("--profiler", action="store_true", help="under torch.profiler")
    parser.add_argument("--stack", action="store_true", help="torch.profiler with with_stack=True")
    parser.add_argument("--workload", choices=["elementwise", "train"], default="elementwise")
    options = parser.parse_args()
    training = options.workload == "train"
    per_step = 1 if training else launches_per_step()
    steps = max(options.ops // per_step, 1)
    work = run_training if training else run
    torch.cuda.init()

    if options.profiler or options.stack:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     with_stack=options.stack) as profiler:
            seconds = work(steps, options.warmup)
        kernels, copies = kernels_in_profiler_trace(profiler)
        print("torch-profiler " + json.dumps({"kernels": kernels, "copies": copies}))
    else:
        seconds = work(steps, options.warmup)

    ops = steps * per_step
    mode = "profiler-stack" if options.stack else "profiler" if options.profiler else "bare"
    print(f"result mode={mode} per_op_us={seconds / ops * 1e6:.3f} ops={ops} timed_s={seconds:.6f}")
    # At least: the warm-up and timed steps (and a fill and a reduction).
    if training:
        return
    print("expected " + json.dumps({"loop kernels": ops,
                                    "step kernels": (options.warmup + steps) * launches_per_step()}))


if __name__ == "__main__":
    main()
