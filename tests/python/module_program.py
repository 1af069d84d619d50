"""Uses every part of the `ferret` module once; check_python_module.py reads
the trace back."""
import asyncio
import threading

import ferret


class FakeTensor:
    """Quacks like a CUDA torch.Tensor (data_ptr, nbytes, is_cuda, device)."""

    class device:
        index = 1

    is_cuda = True
    nbytes = 4096

    def data_ptr(self):
        return 0x7F0000000000


@ferret.function
def decorated():
    ferret.mark("inside decorated")


@ferret.region("named by decorator")
def named():
    pass


@ferret.region("async region")
async def coroutine():
    await asyncio.sleep(0)


def worker():
    ferret.set_thread_name("python worker")
    with ferret.region("in worker"):
        pass


assert ferret.available() and ferret.recording()
ferret.set_metadata("dataset", "mnist")
ferret.set_metadata("batch", 64)
with ferret.region("outer"):
    with ferret.region("inner", domain="mylib"):
        decorated()
    named()
asyncio.run(coroutine())
loss = ferret.counter("loss")
for value in (0.5, 0.25):
    loss.record(value)
ferret.begin("explicit")
ferret.end("explicit")
buffer = bytearray(1024)
with ferret.data_object("buffer", buffer) as host_object:
    assert host_object.id != 0
weights = ferret.register_data_object("weights", FakeTensor())
ferret.unregister_data_object(weights)
address_range = ferret.register_data_object("range", address=0x10000, nbytes=16, memory="pinned")
assert address_range != 0
thread = threading.Thread(target=worker)
thread.start()
thread.join()
ferret.pause()
with ferret.region("while paused"):
    pass
ferret.resume()
ferret.flush()
print("module_program: done")
