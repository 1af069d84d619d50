// sites.cpp — see sites.hpp.
#include "sites.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>

#include "ferret/runtime/backend.hpp"  // demangled_kernel_name: the runtime's demangler

#if FERRET_OMPT_HAVE_LIBDW
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#endif

namespace ferret::ompt {

// With libdw: the symbol table and DWARF line table of every loaded module,
// so that functions of the executable (absent from the dynamic symbol table
// that dladdr reads) and file:line are found. A fresh report of the
// process's modules per batch of sites, so that libraries loaded since count.
struct symbolizer::state {
#if FERRET_OMPT_HAVE_LIBDW
  Dwfl* dwfl = nullptr;
  ~state() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
#endif
};

#if FERRET_OMPT_HAVE_LIBDW
namespace {
// libdw finds an address's compilation unit through .debug_aranges, which
// clang does not emit: then each unit's address ranges are asked in turn.
void line_by_unit_scan(Dwfl_Module* module, Dwarf_Addr address, source_location& where) {
  Dwarf_Addr bias = 0;
  Dwarf* dwarf = dwfl_module_getdwarf(module, &bias);
  if (dwarf == nullptr) return;
  const Dwarf_Addr unbiased = address - bias;
  Dwarf_Off offset = 0;
  Dwarf_Off next = 0;
  std::size_t header_size = 0;
  while (dwarf_nextcu(dwarf, offset, &next, &header_size, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die unit;
    if (dwarf_offdie(dwarf, offset + header_size, &unit) != nullptr &&
        dwarf_haspc(&unit, unbiased) > 0) {
      if (Dwarf_Line* line = dwarf_getsrc_die(&unit, unbiased)) {
        int number = 0;
        if (const char* file = dwarf_linesrc(line, nullptr, nullptr)) where.file = file;
        if (dwarf_lineno(line, &number) == 0) where.line = static_cast<std::uint32_t>(std::max(number, 0));
      }
      return;
    }
    offset = next;
  }
}
}  // namespace
#endif

symbolizer::symbolizer() : state_(std::make_unique<state>()) {
#if FERRET_OMPT_HAVE_LIBDW
  static const Dwfl_Callbacks callbacks = {dwfl_linux_proc_find_elf, dwfl_standard_find_debuginfo,
                                           nullptr, nullptr};
  state_->dwfl = dwfl_begin(&callbacks);
  if (state_->dwfl != nullptr) {
    dwfl_report_begin(state_->dwfl);
    if (dwfl_linux_proc_report(state_->dwfl, getpid()) != 0 ||
        dwfl_report_end(state_->dwfl, nullptr, nullptr) != 0) {
      dwfl_end(state_->dwfl);
      state_->dwfl = nullptr;
    }
  }
#endif
}

symbolizer::~symbolizer() = default;

const char* symbolizer::method() noexcept {
#if FERRET_OMPT_HAVE_LIBDW
  return "DWARF (libdw)";
#else
  return "dynamic symbols (dladdr)";
#endif
}

source_location symbolizer::locate(const void* return_address) {
  source_location where;
  if (return_address == nullptr) return where;
  const auto address = reinterpret_cast<std::uintptr_t>(return_address) - 1;
#if FERRET_OMPT_HAVE_LIBDW
  if (state_->dwfl != nullptr) {
    if (Dwfl_Module* module = dwfl_addrmodule(state_->dwfl, address)) {
      if (const char* symbol = dwfl_module_addrname(module, address))
        where.function = runtime::demangled_kernel_name(symbol);
      if (Dwfl_Line* line = dwfl_module_getsrc(module, address)) {
        int number = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr)) {
          where.file = file;
          where.line = static_cast<std::uint32_t>(std::max(number, 0));
        }
      } else {
        line_by_unit_scan(module, address, where);
      }
    }
  }
  if (!where.function.empty()) return where;
#endif
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(address), &info) != 0) {
    if (info.dli_sname != nullptr) {
      where.function = runtime::demangled_kernel_name(info.dli_sname);
    } else if (info.dli_fname != nullptr) {
      // No symbol: the module and the offset, which addr2line resolves.
      where.function = fmt::format("{}+0x{:x}", info.dli_fname,
                                   address - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
    }
  }
  return where;
}

const detail::site* site_registry::find_or_add(const char* label, const void* code, int device) {
  std::lock_guard lock{mutex_};
  auto& slot = entries_[{label, code, device}];
  if (slot) return &slot->site;
  slot = std::make_unique<entry>();
  entry& e = *slot;
  e.code = code;
  e.name = device >= 0 ? fmt::format("{} [device {}]", label, device) : std::string{label};
  e.site.name = e.name.c_str();
  e.site.domain = "openmp";
  if (code != nullptr) {
    if (draining_)
      symbolize(e);
    else
      pending_.push_back(&e);
  }
  return &e.site;
}

void site_registry::symbolize(entry& e) {
  if (!symbolizer_) symbolizer_ = std::make_unique<symbolizer>();
  source_location where = symbolizer_->locate(e.code);
  e.function = std::move(where.function);
  e.file = std::move(where.file);
  e.site.function = e.function.empty() ? nullptr : e.function.c_str();
  e.site.file = e.file.empty() ? nullptr : e.file.c_str();
  e.site.line = where.line;
  ++symbolized_;
}

void site_registry::drain_started() {
  std::lock_guard lock{mutex_};
  draining_ = true;
  if (pending_.empty()) return;
  // Modules loaded since the last batch are reported afresh.
  symbolizer_ = std::make_unique<symbolizer>();
  for (entry* e : pending_) symbolize(*e);
  pending_.clear();
}

void site_registry::drain_finished() {
  std::lock_guard lock{mutex_};
  draining_ = false;
}

std::size_t site_registry::size() const {
  std::lock_guard lock{mutex_};
  return entries_.size();
}

std::uint64_t site_registry::symbolized() const {
  std::lock_guard lock{mutex_};
  return symbolized_;
}

}  // namespace ferret::ompt
