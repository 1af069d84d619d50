"""Reads the chrome trace and summary of torch_context.py traced by ferret-run
and prints what share of the GPU time each kind of context explains, with the
top contexts; fails when no kernel sits under a Python line of the script,
under the "forward" NVTX range, or under autograd's thread."""
import json
import sys

trace_path, summary_path, script = sys.argv[1:4]
with open(script) as f:
    lines = {text.split("# line: ")[1].strip(): number
             for number, text in enumerate(f.read().split("\n"), 1) if "# line: " in text}
with open(trace_path) as f:
    trace = json.load(f)
kernels = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
total = sum(e["dur"] for e in kernels) or 1.0
by_context = {}
for e in kernels:
    context = e["args"].get("context", "(no region)")
    by_context[context] = by_context.get(context, 0.0) + e["dur"]


def share(predicate):
    return 100.0 * sum(t for c, t in by_context.items() if predicate(c)) / total


python_line = share(lambda c: "torch_context.py:" in c)
nvtx_forward = share(lambda c: c.startswith("forward/") or c == "forward")
under_nvtx = share(lambda c: c.split("/")[0] in ("forward", "backward", "optimizer"))
print("torch context: %d kernels, %.1f ms of GPU time" % (len(kernels), total / 1000))
print("torch context: %.1f%% of GPU time under a Python line of torch_context.py, %.1f%% under an "
      "NVTX range (%.1f%% under 'forward'), %.1f%% without context"
      % (python_line, under_nvtx, nvtx_forward, share(lambda c: c == "(no region)")))
# The backward pass runs on autograd's device thread, which PyTorch names.
autograd = share(lambda c: c.startswith("(thread pt_autograd_"))
print("torch context: %.1f%% of GPU time under autograd's thread, (thread pt_autograd_<device>)" % autograd)
for context, spent in sorted(by_context.items(), key=lambda item: -item[1])[:8]:
    print("torch context:   %5.1f%%  %s" % (100.0 * spent / total, context))
forward_line = "torch_context.py:%d train_step" % lines["forward"]
ok = any(forward_line in c and c.startswith("forward/") for c in by_context)
print("torch context: %s: a kernel under forward/.../%s" % ("ok" if ok else "FAILED", forward_line))
with open(summary_path) as f:
    summary = f.read()
in_summary = forward_line in summary
print("torch context: %s: the summary's GPU time by context names %s"
      % ("ok" if in_summary else "FAILED", forward_line))
print("torch context: %s: backward kernels under (thread pt_autograd_...)" % ("ok" if autograd > 0 else "FAILED"))
sys.exit(0 if ok and in_summary and autograd > 0 else 1)
