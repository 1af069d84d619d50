"""What Python call paths cost a PyTorch program: two workloads timed inside
one process (after a warm-up), printed as one line each:
  small-op loop   2000 iterations of four element-wise ops on a 1024-float tensor
  training step   200 steps of a two-layer MLP (forward, backward, SGD)
run.sh runs this bare, under ferret-run with FERRET_PYTHON=0, and with
FERRET_PYTHON=1, interleaved."""
import time

import torch

device = "cuda"


def small_ops(iterations):
    x = torch.ones(1024, device=device)
    for _ in range(iterations):
        x = x * 1.0001
        x = x + 0.5
        x = torch.relu(x)
        x = x - 0.5
    torch.cuda.synchronize()


def training(steps):
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 256, device=device)
    y = torch.randint(0, 10, (128,), device=device)
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def timed(workload, amount):
    workload(amount // 10)  # warm-up: caching allocator, kernels loaded
    start = time.perf_counter()
    workload(amount)
    return time.perf_counter() - start


print("small-op loop %.6f" % timed(small_ops, 2000))
print("training step %.6f" % timed(training, 200))
