/* Prints one row of backends/collectors/python/src/cpython_layouts.cpp for the CPython
 * whose headers it is compiled with (tools/python-layouts/python-layouts.sh), and on stderr
 * the bits of a string's state that cpython.cpp assumes (kind 0x1c, compact
 * 0x20, ascii 0x40). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#endif
int main(void) {
  printf("    {%d, ", PY_MINOR_VERSION);
#if PY_VERSION_HEX < 0x030B0000
  printf("%zu, 0, ", offsetof(PyThreadState, frame));
  printf("%zu, %zu, %zu, 0, -1, ", offsetof(PyFrameObject, f_back), offsetof(PyFrameObject, f_code), offsetof(PyFrameObject, f_lasti));
  printf("0, 0, ");
#elif PY_VERSION_HEX < 0x030D0000
  printf("%zu, %zu, ", offsetof(PyThreadState, cframe), offsetof(_PyCFrame, current_frame));
  printf("%zu, %zu, %zu, %zu, %d, ", offsetof(_PyInterpreterFrame, previous), offsetof(_PyInterpreterFrame, f_code), offsetof(_PyInterpreterFrame, prev_instr), offsetof(_PyInterpreterFrame, owner),
#if PY_VERSION_HEX >= 0x030C0000
    FRAME_OWNED_BY_CSTACK
#else
    -1
#endif
  );
  printf("%zu, %zu, ", offsetof(PyCodeObject, co_code_adaptive), offsetof(PyCodeObject, _co_firsttraceable));
#else
  printf("%zu, 0, ", offsetof(PyThreadState, current_frame));
  printf("%zu, %zu, %zu, %zu, %d, ", offsetof(_PyInterpreterFrame, previous), offsetof(_PyInterpreterFrame, f_executable), offsetof(_PyInterpreterFrame, instr_ptr), offsetof(_PyInterpreterFrame, owner), FRAME_OWNED_BY_CSTACK);
  printf("%zu, %zu, ", offsetof(PyCodeObject, co_code_adaptive), offsetof(PyCodeObject, _co_firsttraceable));
#endif
  printf("%zu, %zu, ", offsetof(PyCodeObject, co_filename), offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030B0000
  printf("%zu, ", offsetof(PyCodeObject, co_qualname));
#else
  printf("0, ");
#endif
  printf("%zu, ", offsetof(PyCodeObject, co_firstlineno));
  printf("%zu, %zu, %zu, %zu, %zu},\n", offsetof(PyObject, ob_type), sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject), offsetof(PyASCIIObject, length), offsetof(PyASCIIObject, state));
  /* bit positions of the unicode state */
  PyASCIIObject a; memset(&a, 0, sizeof a); a.state.kind = 7; unsigned int k; memcpy(&k, (char*)&a + offsetof(PyASCIIObject, state), 4);
  memset(&a, 0, sizeof a); a.state.compact = 1; unsigned int c; memcpy(&c, (char*)&a + offsetof(PyASCIIObject, state), 4);
  memset(&a, 0, sizeof a); a.state.ascii = 1; unsigned int s; memcpy(&s, (char*)&a + offsetof(PyASCIIObject, state), 4);
  fprintf(stderr, "kind mask %#x compact %#x ascii %#x\n", k, c, s);
  return 0;
}
