"""A Python program whose 'GPU work' (tests/python/fake_gpu.cpp, through
ctypes) check_python_context.py attributes to Python lines. Each launch line
ends with a comment naming its kernel, so that the checker finds the line."""
import ctypes
import sys
import threading

import fakelib
import ferret

gpu = ctypes.CDLL(sys.argv[1])          # calls release the GIL
gpu_holding_gil = ctypes.PyDLL(sys.argv[1])  # calls keep it


def step():
    gpu.fake_gpu_launch(b"kernel_released_gil")  # launch: kernel_released_gil
    gpu.fake_gpu_copy(ctypes.c_ulonglong(4096))  # launch: copy


def step_holding_gil():
    gpu_holding_gil.fake_gpu_launch(b"kernel_holding_gil")  # launch: kernel_holding_gil


def deep(levels):
    if levels == 0:
        gpu.fake_gpu_launch(b"kernel_deep")  # launch: kernel_deep
        return
    deep(levels - 1)  # launch: recursion


def worker():
    gpu.fake_gpu_launch(b"kernel_in_thread")  # launch: kernel_in_thread


class Model:
    def forward(self):
        gpu.fake_gpu_launch(b"kernel_in_method")  # launch: kernel_in_method


def main():
    step()  # launch: main calls step
    step_holding_gil()  # launch: main calls step_holding_gil
    fakelib.run(gpu)  # launch: main calls fakelib
    deep(30)  # launch: main calls deep
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    Model().forward()  # launch: main calls forward
    gpu.fake_gpu_launch_from_native_thread(b"kernel_in_native_thread")
    with ferret.region("annotated"):
        step()  # launch: annotated step


main()  # launch: module calls main
