// cpython.hpp — reading the calling thread's Python frames from ferret, with
// no build-time dependency on Python: CPython is found in the running process
// (dlsym), and its frames are read one of two ways.
//
// - Layouts (CPython 3.9 to 3.13, the default): the thread's frame chain is
//   read directly, with the struct offsets of that CPython release
//   (cpython_layouts.cpp; tools/python-layouts/python-layouts.sh regenerates them from each
//   release's headers). Reads only: no reference counts, no allocation, no
//   GIL needed. That matters: PyTorch releases the GIL before it launches a
//   kernel, so a launching thread seldom holds it. The thread's own frames
//   cannot change while it runs ferret's code, so the reads are safe; every
//   code object and string read is checked against its type first.
// - The C API (any other CPython 3.9+, or FERRET_PYTHON=api): PyEval_GetFrame
//   and the frame accessors. Only while the thread holds the GIL.
#pragma once

#include <cstddef>
#include <string>

namespace ferret::python {

// Opaque: CPython's objects, by address.
struct py_object;

struct python_frame {
  const py_object* code;
  int line;
  int offset = -1;  // the instruction's byte offset in its code; -1 when the reader cannot say
};

// What a frame's code object says about itself: names cached by a code
// object's address are checked against it, since the address may be reused
// once the code object is gone (ferret holds no references).
struct code_identity {
  const void* file;      // the co_filename object
  const void* function;  // co_qualname (3.11+) or co_name
  int first_line;
};

inline bool same(const code_identity& a, const code_identity& b) noexcept {
  return a.file == b.file && a.function == b.function && a.first_line == b.first_line;
}

class frame_reader {
 public:
  virtual ~frame_reader() = default;
  // The calling thread's frames, innermost first; `deeper` when more than
  // `room` exist. 0 when the thread runs no Python (or it cannot be read now).
  // `previous` (with their identities): this thread's last walk; a frame at
  // the same instruction of the same code object takes its line from there
  // instead of decoding the line table again (most of a walk's cost: a loop
  // launching from one line walks the same frames every time).
  virtual std::size_t walk(python_frame* frames, std::size_t room, bool& deeper,
                           const python_frame* previous, const code_identity* previous_identities,
                           std::size_t previous_count) const noexcept = 0;
  // Cheap identity of a code object, to validate cached names.
  virtual code_identity identify(const py_object* code) const noexcept = 0;
  // The code's file and function names (UTF-8); false if they cannot be read.
  virtual bool names(const py_object* code, std::string& file, std::string& function) const = 0;
  // Releases what walk() took (the API reader's references).
  virtual void release(python_frame* frames, std::size_t count) const noexcept = 0;
};

// The reader for this process's CPython, chosen once from FERRET_PYTHON
// ("1": layouts when the release has them, else the C API; "api": the C API);
// nullptr without CPython 3.9+ (the reason goes to `reason`).
const frame_reader* find_frame_reader(bool api_only, const char** reason) noexcept;

}  // namespace ferret::python
