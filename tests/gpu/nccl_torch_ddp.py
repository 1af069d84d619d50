"""A PyTorch DDP step between two GPUs, for tests/gpu/nccl_two_gpus.sh (traced
through ferret-run, which makes ferret NCCL's profiler plugin): two processes
from torch.multiprocessing.spawn, each a DistributedDataParallel(Linear(1024,
1024)) forward and backward (DDP broadcasts the parameters at construction and
all-reduces the gradient bucket from its autograd thread), then one
dist.all_reduce of 1 Mi floats, checked."""
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def work(rank, port):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=2)
    torch.cuda.set_device(rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1024, 1024).cuda(), device_ids=[rank])
    model(torch.randn(64, 1024, device="cuda")).sum().backward()
    total = torch.ones(1 << 20, device="cuda") * (rank + 1)
    dist.all_reduce(total)
    torch.cuda.synchronize()
    right = bool((total == 3.0).all().item())
    print("rank %d: NCCL %s, %s" % (rank, ".".join(map(str, torch.cuda.nccl.version())),
                                    "results right" if right else "RESULTS WRONG"), flush=True)
    dist.destroy_process_group()
    if not right:
        sys.exit(1)


if __name__ == "__main__":
    mp.spawn(work, args=(int(sys.argv[1]) if len(sys.argv) > 1 else 29533,), nprocs=2)
