// ferret/python/call_stack.hpp — Python call paths as calling context of GPU
// work (libferret_python, CMake target ferret::python).
//
// A collector calls record_call_stack() on the application thread when an API
// call that creates GPU work (launch, copy, memset, allocation,
// synchronisation) is entered: after writing the call's region begin and
// before its kind_correlation event. If that thread is running Python, the
// Python frames (folded, see backends/python/src/frame_folding.hpp) are written
// as one kind_call_stack event, and the runtime places them in the calling
// context of the call's GPU work, between the annotated regions and the API
// call. Host regions are not touched: Python frames are never host regions.
//
// CPython (3.9 or newer) is found in the running process at run time; ferret
// has no build-time dependency on Python. The frames are read whether or not
// the thread holds the GIL (PyTorch releases it before launching), without
// touching reference counts (backends/python/src/cpython.hpp says how).
// FERRET_PYTHON=0 turns this off.
#pragma once

#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::python {

/// Writes the calling thread's Python call stack for the GPU API call being
/// entered (see above). Not recording: one load and one branch; a process
/// without CPython: one more branch. Never throws, never waits for the GIL.
FERRET_EXPORT void record_call_stack() noexcept;

}  // namespace ferret::python
