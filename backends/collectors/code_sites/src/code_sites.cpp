// code_sites.cpp — see code_sites.hpp.
#include "code_sites.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>

#include "ferret/runtime/backend.hpp"  // demangled_kernel_name: the runtime's demangler

#if FERRET_CODE_SITES_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#endif

namespace ferret::code_sites {

// With libdw: the symbol table and DWARF line table of every loaded module,
// so that functions of the executable (absent from the dynamic symbol table
// that dladdr reads) and file:line are found. A fresh report of the
// process's modules per batch of sites, so that libraries loaded since count.
struct symbolizer::state {
#if FERRET_CODE_SITES_HAVE_LIBDW
  Dwfl* dwfl = nullptr;
  ~state() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
#endif
};

#if FERRET_CODE_SITES_HAVE_LIBDW
namespace {
// libdw finds an address's compilation unit through .debug_aranges, which
// clang does not emit: then each unit's address ranges are asked in turn.
bool unit_of(Dwfl_Module* module, Dwarf_Addr address, Dwarf_Die& unit, Dwarf_Addr& bias) {
  if (Dwarf_Die* found = dwfl_module_addrdie(module, address, &bias)) {
    unit = *found;
    return true;
  }
  Dwarf* dwarf = dwfl_module_getdwarf(module, &bias);
  if (dwarf == nullptr) return false;
  Dwarf_Off offset = 0;
  Dwarf_Off next = 0;
  std::size_t header_size = 0;
  while (dwarf_nextcu(dwarf, offset, &next, &header_size, nullptr, nullptr, nullptr) == 0) {
    if (dwarf_offdie(dwarf, offset + header_size, &unit) != nullptr &&
        dwarf_haspc(&unit, address - bias) > 0)
      return true;
    offset = next;
  }
  return false;
}

bool artificial(Dwarf_Die& die) {
  Dwarf_Attribute attribute;
  bool flag = false;
  return dwarf_attr_integrate(&die, DW_AT_artificial, &attribute) != nullptr &&
         dwarf_formflag(&attribute, &flag) == 0 && flag;
}

const char* string_attribute(Dwarf_Die& die, unsigned int name) {
  Dwarf_Attribute attribute;
  return dwarf_attr_integrate(&die, name, &attribute) != nullptr ? dwarf_formstring(&attribute) : nullptr;
}

// The file `function` is declared in. DWARF 5 numbers the unit's primary
// source file 0, and clang declares functions there; elfutils 0.188's
// dwarf_decl_file refuses index 0 (whether clang uses 0 or a later entry that
// repeats the name depends on the file table, so on the source's path).
std::string declared_file(Dwarf_Die& function, Dwarf_Die& unit) {
  if (const char* file = dwarf_decl_file(&function)) return file;
  Dwarf_Attribute attribute;
  Dwarf_Word index = 0;
  if (dwarf_attr_integrate(&function, DW_AT_decl_file, &attribute) == nullptr ||
      dwarf_formudata(&attribute, &index) != 0 || index != 0)
    return {};
  const char* name = dwarf_diename(&unit);
  if (name == nullptr) return {};
  if (name[0] == '/') return name;
  const char* directory = string_attribute(unit, DW_AT_comp_dir);
  return directory != nullptr ? std::string{directory} + "/" + name : std::string{name};
}

// The source line of `address` from the line table, and the function the
// code there belongs to: the innermost inlined function written by someone
// (not one the compiler made up, like an outlined OpenMP region, which the
// symbol table names better), else the symbol's own.
//
// A row of line 0 says the compiler recorded no line for that code (clang 19
// emits the runtime calls of `target` and `target data` without one); its
// file is only left over from the row before it, often an inlined header. Such
// an address gets the file of its function and no line (0).
void locate_in_dwarf(Dwfl_Module* module, Dwarf_Addr address, source_location& where) {
  Dwarf_Die unit;
  Dwarf_Addr bias = 0;
  if (!unit_of(module, address, unit, bias)) return;
  const Dwarf_Addr unbiased = address - bias;
  if (Dwarf_Line* line = dwarf_getsrc_die(&unit, unbiased)) {
    int number = 0;
    if (dwarf_lineno(line, &number) == 0 && number > 0) {
      if (const char* file = dwarf_linesrc(line, nullptr, nullptr)) {
        where.file = file;
        where.line = static_cast<std::uint32_t>(number);
      }
    }
  }
  Dwarf_Die* scopes = nullptr;
  const int count = dwarf_getscopes(&unit, unbiased, &scopes);
  Dwarf_Die* function = nullptr;
  for (int i = 0; i < count && function == nullptr; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine && !artificial(scopes[i])) function = &scopes[i];
    if (tag == DW_TAG_subprogram) function = &scopes[i];
  }
  if (function != nullptr) {
    if (dwarf_tag(function) == DW_TAG_inlined_subroutine) {
      const char* linkage = string_attribute(*function, DW_AT_linkage_name);
      const char* name = linkage != nullptr ? linkage : string_attribute(*function, DW_AT_name);
      if (name != nullptr) where.function = runtime::demangled_kernel_name(name);
    }
    if (where.file.empty()) where.file = declared_file(*function, unit);
  }
  free(scopes);
}
}  // namespace
#endif

symbolizer::symbolizer() : state_(std::make_unique<state>()) {
#if FERRET_CODE_SITES_HAVE_LIBDW
  // Separate debug files by build ID only (/usr/lib/debug/.build-id, where
  // Debian's -dbgsym packages put them): dwfl_standard_find_debuginfo would
  // start a debuginfod client (libcurl, OpenSSL) inside the traced program,
  // and with DEBUGINFOD_URLS set download debug files at a drain.
  static const Dwfl_Callbacks callbacks = {dwfl_linux_proc_find_elf, dwfl_build_id_find_debuginfo,
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
#if FERRET_CODE_SITES_HAVE_LIBDW
  return "DWARF (libdw)";
#else
  return "dynamic symbols (dladdr)";
#endif
}

source_location symbolizer::locate(const void* return_address) {
  source_location where;
  if (return_address == nullptr) return where;
  const auto address = reinterpret_cast<std::uintptr_t>(return_address) - 1;
#if FERRET_CODE_SITES_HAVE_LIBDW
  if (state_->dwfl != nullptr) {
    if (Dwfl_Module* module = dwfl_addrmodule(state_->dwfl, address)) {
      if (const char* symbol = dwfl_module_addrname(module, address))
        where.function = runtime::demangled_kernel_name(symbol);
      locate_in_dwarf(module, address, where);
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
  e.site.domain = domain_;
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

}  // namespace ferret::code_sites
