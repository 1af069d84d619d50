"""PyTorch on the GPU, traced through ferret-run by gpu_trace_test: ten bf16
matrix products of 2048 x 2048 matrices, then the last result copied to the
host (2048 * 2048 * 2 bytes = 8 MiB). Prints one line "expected {json}"."""
import json

import torch

SIZE = 2048
PRODUCTS = 10

a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.bfloat16)
b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.bfloat16)
for _ in range(PRODUCTS):
    c = a @ b
result = c.cpu()
print("expected " + json.dumps({"products": PRODUCTS,
                                "result bytes": result.numel() * result.element_size()}))
