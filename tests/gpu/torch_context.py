"""A small PyTorch training loop with NVTX ranges (torch.cuda.nvtx.range),
traced by torch_context.sh under ferret-run: the summary must show GPU time by
Python line and by NVTX range. Lines that launch GPU work end in a comment
naming them, so that the checker can find them."""
import torch

torch.manual_seed(0)
device = "cuda"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(512, 1024)
        self.out = torch.nn.Linear(1024, 10)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))  # line: Net.forward


def train_step(model, optimizer, x, y):
    with torch.cuda.nvtx.range("forward"):
        loss = torch.nn.functional.cross_entropy(model(x), y)  # line: forward
    with torch.cuda.nvtx.range("backward"):
        loss.backward()  # line: backward
    with torch.cuda.nvtx.range("optimizer"):
        optimizer.step()  # line: optimizer
        optimizer.zero_grad(set_to_none=True)
    return loss


def main():
    model = Net().to(device)  # line: model to device
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512, device=device)
    y = torch.randint(0, 10, (256,), device=device)
    for _ in range(50):
        loss = train_step(model, optimizer, x, y)  # line: train_step
    print("loss %.4f" % loss.item())  # line: loss.item


main()
