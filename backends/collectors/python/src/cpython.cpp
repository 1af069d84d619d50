#include "cpython.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cpython_layouts.hpp"
#include "ferret/runtime/text.hpp"

namespace ferret::python {
namespace {

// CPython's symbols are global in a python executable; an embedding program
// may have loaded libpython privately (RTLD_LOCAL), then it is found by name.
// False when the process has no CPython.
bool find_symbol_scope(void*& scope) noexcept {
  scope = RTLD_DEFAULT;  // a null handle: not an answer by itself
  if (dlsym(RTLD_DEFAULT, "Py_IsInitialized") != nullptr) return true;
  void* found = nullptr;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const char* name = info->dlpi_name;
        if (name == nullptr || std::strstr(name, "libpython3") == nullptr) return 0;
        *static_cast<void**>(out) = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
        return *static_cast<void**>(out) != nullptr ? 1 : 0;
      },
      &found);
  scope = found;
  return found != nullptr;
}

template <class F>
bool bind(void* scope, F& target, const char* name) noexcept {
  target = reinterpret_cast<F>(dlsym(scope, name));
  return target != nullptr;
}

// Functions both readers need; none of them requires the GIL.
struct common_api {
  int (*is_initialized)() = nullptr;
  int (*is_finalizing)() = nullptr;  // _Py_IsFinalizing until 3.12, Py_IsFinalizing from 3.13
  int (*code_line)(py_object*, int) = nullptr;  // PyCode_Addr2Line: reads the line table only

  bool bind_all(void* scope) noexcept {
    return (bind(scope, is_finalizing, "Py_IsFinalizing") || bind(scope, is_finalizing, "_Py_IsFinalizing")) &&
           bind(scope, is_initialized, "Py_IsInitialized") && bind(scope, code_line, "PyCode_Addr2Line");
  }
  bool running() const noexcept { return is_initialized() != 0 && is_finalizing() == 0; }
};

template <class T>
T read(const void* base, std::size_t offset) noexcept {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof value);
  return value;
}

// ---------------------------------------------------------------------------
// Layouts: the frame chain read in place.

class layout_reader final : public frame_reader {
 public:
  layout_reader(const cpython_layout& layout, const common_api& common, void* scope) noexcept
      : layout_(layout), common_(common) {
    bind(scope, this_thread_state_, "PyGILState_GetThisThreadState");
    code_type_ = dlsym(scope, "PyCode_Type");
    unicode_type_ = dlsym(scope, "PyUnicode_Type");
  }
  bool usable() const noexcept {
    return this_thread_state_ != nullptr && code_type_ != nullptr && unicode_type_ != nullptr;
  }

  std::size_t walk(python_frame* frames, std::size_t room, bool& deeper, const python_frame* previous,
                   const code_identity* previous_identities,
                   std::size_t previous_count) const noexcept override {
    deeper = false;
    if (!common_.running()) return 0;
    // The thread's state whether or not it holds the GIL now.
    const void* thread = this_thread_state_();
    if (thread == nullptr) return 0;
    const void* frame = read<const void*>(thread, layout_.thread_frame);
    if (layout_.minor == 11 || layout_.minor == 12)
      frame = frame != nullptr ? read<const void*>(frame, layout_.cframe_frame) : nullptr;
    std::size_t count = 0;
    for (; frame != nullptr; frame = read<const void*>(frame, layout_.frame_previous)) {
      if (layout_.owned_by_c_stack >= 0 &&
          read<char>(frame, layout_.frame_owner) == static_cast<char>(layout_.owned_by_c_stack))
        continue;  // a shim frame where C called into Python
      const auto* code = read<const py_object*>(frame, layout_.frame_code);
      if (!is_code(code)) break;  // not a layout ferret knows: stop rather than guess
      int offset = 0;
      if (!offset_of(frame, code, offset)) continue;  // a frame being set up, or a shim
      if (count == room) {
        deeper = true;
        break;
      }
      // The line of the last walk when nothing changed (the identity guards
      // against another code object at a freed one's address).
      int line = 0;
      if (count < previous_count && previous[count].code == code && previous[count].offset == offset &&
          same(identify(code), previous_identities[count]))
        line = previous[count].line;
      else
        line = common_.code_line(const_cast<py_object*>(code), offset);
      frames[count++] = python_frame{code, line, offset};
    }
    return count;
  }

  code_identity identify(const py_object* code) const noexcept override {
    return {read<const void*>(code, layout_.code_filename), read<const void*>(code, function_offset()),
            read<int>(code, layout_.code_first_line)};
  }

  bool names(const py_object* code, std::string& file, std::string& function) const override {
    return text_of(read<const void*>(code, layout_.code_filename), file) &&
           text_of(read<const void*>(code, function_offset()), function);
  }

  void release(python_frame*, std::size_t) const noexcept override {}

 private:
  std::size_t function_offset() const noexcept {
    return layout_.minor >= 11 ? layout_.code_qualname : layout_.code_name;
  }
  bool is_code(const void* object) const noexcept {
    return object != nullptr && read<const void*>(object, layout_.object_type) == code_type_;
  }

  // The byte offset of the instruction a frame is at, from which
  // PyFrame_GetLineNumber computes its line; false for a frame still being
  // set up (PyFrame_GetBack skips those too).
  bool offset_of(const void* frame, const py_object* code, int& byte_offset) const noexcept {
    if (layout_.minor <= 10) {
      const int last = read<int>(frame, layout_.frame_instruction);  // 3.9: bytes, 3.10: code units
      byte_offset = layout_.minor == 9 ? last : last * 2;
    } else {
      const auto* instruction = read<const char*>(frame, layout_.frame_instruction);
      const char* first = reinterpret_cast<const char*>(code) + layout_.code_instructions;
      const std::ptrdiff_t offset = instruction - first;
      const bool by_generator = read<char>(frame, layout_.frame_owner) == 1;  // FRAME_OWNED_BY_GENERATOR
      if (!by_generator && offset / 2 < read<int>(code, layout_.code_first_traceable))
        return false;  // incomplete: still being set up
      byte_offset = static_cast<int>(offset);
    }
    return true;
  }

  // A str object's text: compact strings only (code objects' names are).
  bool text_of(const void* object, std::string& out) const {
    if (object == nullptr || read<const void*>(object, layout_.object_type) != unicode_type_) return false;
    const auto length = read<std::int64_t>(object, layout_.unicode_length);
    const auto state = read<std::uint32_t>(object, layout_.unicode_state);
    const unsigned kind = (state >> 2) & 7;
    const bool compact = (state >> 5) & 1;
    const bool ascii = (state >> 6) & 1;
    if (!compact || length < 0 || length > (1 << 16)) return false;
    const char* data = static_cast<const char*>(object) + (ascii ? layout_.ascii_size : layout_.compact_size);
    out.clear();
    for (std::int64_t i = 0; i < length; ++i) {
      std::uint32_t c = 0;
      switch (kind) {
        case 1: c = static_cast<unsigned char>(data[i]); break;
        case 2: c = read<std::uint16_t>(data, static_cast<std::size_t>(i) * 2); break;
        case 4: c = read<std::uint32_t>(data, static_cast<std::size_t>(i) * 4); break;
        default: return false;
      }
      runtime::append_utf8(out, c);
    }
    return true;
  }

  cpython_layout layout_;
  common_api common_;
  const void* (*this_thread_state_)() = nullptr;
  const void* code_type_ = nullptr;
  const void* unicode_type_ = nullptr;
};

// ---------------------------------------------------------------------------
// The C API, while the GIL is held.

class api_reader final : public frame_reader {
 public:
  api_reader(int minor, const common_api& common) noexcept : minor_(minor), common_(common) {}

  bool bind_all(void* scope) noexcept {
    return bind(scope, gil_state_check_, "PyGILState_Check") &&
           bind(scope, eval_get_frame_, "PyEval_GetFrame") &&
           bind(scope, frame_get_back_, "PyFrame_GetBack") &&
           bind(scope, frame_get_code_, "PyFrame_GetCode") &&
           bind(scope, frame_get_line_number_, "PyFrame_GetLineNumber") &&
           bind(scope, get_attr_string_, "PyObject_GetAttrString") &&
           bind(scope, unicode_as_utf8_, "PyUnicode_AsUTF8") &&
           bind(scope, err_occurred_, "PyErr_Occurred") && bind(scope, err_fetch_, "PyErr_Fetch") &&
           bind(scope, err_restore_, "PyErr_Restore") && bind(scope, inc_ref_, "Py_IncRef") &&
           bind(scope, dec_ref_, "Py_DecRef");
  }

  std::size_t walk(python_frame* frames, std::size_t room, bool& deeper, const python_frame*,
                   const code_identity*, std::size_t) const noexcept override {
    deeper = false;
    if (!common_.running() || gil_state_check_() == 0) return 0;
    py_object* frame = eval_get_frame_();  // borrowed
    if (frame == nullptr) return 0;
    inc_ref_(frame);
    std::size_t count = 0;
    while (frame != nullptr) {
      if (count == room) {
        deeper = true;
        dec_ref_(frame);
        break;
      }
      py_object* code = frame_get_code_(frame);  // new reference, released in release()
      if (code == nullptr) {
        dec_ref_(frame);
        break;
      }
      frames[count++] = python_frame{code, frame_get_line_number_(frame), -1};
      py_object* outer = frame_get_back_(frame);
      dec_ref_(frame);
      frame = outer;
    }
    return count;
  }

  code_identity identify(const py_object* code) const noexcept override {
    // The attribute objects themselves (still referenced by the code object).
    code_identity identity{nullptr, nullptr, 0};
    with_error_kept([&] {
      identity.file = borrowed_attribute(code, "co_filename");
      identity.function = borrowed_attribute(code, minor_ >= 11 ? "co_qualname" : "co_name");
    });
    return identity;
  }

  bool names(const py_object* code, std::string& file, std::string& function) const override {
    with_error_kept([&] {
      file = text_attribute(code, "co_filename");
      function = text_attribute(code, minor_ >= 11 ? "co_qualname" : "co_name");
    });
    return !file.empty() && !function.empty();
  }

  void release(python_frame* frames, std::size_t count) const noexcept override {
    for (std::size_t i = 0; i < count; ++i) dec_ref_(const_cast<py_object*>(frames[i].code));
  }

 private:
  // Attribute lookups must not run with an exception pending, nor leave one:
  // the thread's own is kept aside, any raised here is dropped.
  template <class F>
  void with_error_kept(F&& body) const {
    py_object *type = nullptr, *value = nullptr, *traceback = nullptr;
    err_fetch_(&type, &value, &traceback);
    body();
    if (err_occurred_() != nullptr) {
      py_object *ours[3] = {nullptr, nullptr, nullptr};
      err_fetch_(&ours[0], &ours[1], &ours[2]);
      for (py_object* object : ours)
        if (object != nullptr) dec_ref_(object);
    }
    err_restore_(type, value, traceback);
  }
  const void* borrowed_attribute(const py_object* code, const char* name) const {
    py_object* value = get_attr_string_(const_cast<py_object*>(code), name);
    if (value != nullptr) dec_ref_(value);  // the code object keeps it
    return value;
  }
  std::string text_attribute(const py_object* code, const char* name) const {
    py_object* value = get_attr_string_(const_cast<py_object*>(code), name);
    if (value == nullptr) return {};
    const char* text = unicode_as_utf8_(value);
    std::string copied = text != nullptr ? text : "";
    dec_ref_(value);
    return copied;
  }

  int minor_;
  common_api common_;
  int (*gil_state_check_)() = nullptr;
  py_object* (*eval_get_frame_)() = nullptr;
  py_object* (*frame_get_back_)(py_object*) = nullptr;
  py_object* (*frame_get_code_)(py_object*) = nullptr;
  int (*frame_get_line_number_)(py_object*) = nullptr;
  py_object* (*get_attr_string_)(py_object*, const char*) = nullptr;
  const char* (*unicode_as_utf8_)(py_object*) = nullptr;
  py_object* (*err_occurred_)() = nullptr;
  void (*err_fetch_)(py_object**, py_object**, py_object**) = nullptr;
  void (*err_restore_)(py_object*, py_object*, py_object*) = nullptr;
  void (*inc_ref_)(py_object*) = nullptr;
  void (*dec_ref_)(py_object*) = nullptr;
};

const frame_reader* choose(bool api_only, const char** reason) noexcept {
  void* scope = nullptr;
  if (!find_symbol_scope(scope)) {
    *reason = "no CPython in this process";
    return nullptr;
  }
  const char* (*get_version)() = nullptr;
  if (!bind(scope, get_version, "Py_GetVersion")) {
    *reason = "CPython's Py_GetVersion is missing";
    return nullptr;
  }
  const char* version = get_version();
  const int minor = version != nullptr && std::strncmp(version, "3.", 2) == 0 ? std::atoi(version + 2) : -1;
  common_api common;
  if (minor < 9 || !common.bind_all(scope)) {
    *reason = "CPython older than 3.9";
    return nullptr;
  }
  // Free-threaded builds lay objects out differently: the C API only.
  const bool default_build = std::strstr(version, "free-threading") == nullptr;
  if (!api_only && default_build)
    if (const cpython_layout* layout = layout_of(minor)) {
      static layout_reader reader{*layout, common, scope};
      if (reader.usable()) return &reader;
    }
  static api_reader reader{minor, common};
  if (!reader.bind_all(scope)) {
    *reason = "this CPython lacks a function of the C API ferret reads frames with";
    return nullptr;
  }
  *reason = "";
  return &reader;
}

}  // namespace

const frame_reader* find_frame_reader(bool api_only, const char** reason) noexcept {
  static const char* why = "";
  static const frame_reader* const reader = choose(api_only, &why);
  if (reason != nullptr) *reason = why;
  return reader;
}

}  // namespace ferret::python
