// Compiled into every program that links ferret::nvtx (and so ferret::cuda):
// NVTX's statically-linked-injection hooks. NVTX's header gives each program a
// weak, hidden InitializeInjectionNvtx2_fnptr that is null unless a tool
// defines it; this definition points it at ferret's NVTX tool, so the
// program's own NVTX ranges are recorded without NVTX_INJECTION64_PATH (which,
// when set, still wins). NVTX inside shared libraries the program loads has
// hooks of its own: those need NVTX_INJECTION64_PATH (ferret-run sets it).
#include <cstdint>

extern "C" {
using ferret_nvtx_export_table_getter = const void* (*)(std::uint32_t);
int InitializeInjectionNvtx2(ferret_nvtx_export_table_getter get_export_table);
[[gnu::used]] int (*InitializeInjectionNvtx2_fnptr)(ferret_nvtx_export_table_getter) =
    InitializeInjectionNvtx2;
// The same hook for NVTX's extensions (the payload extension's calls).
struct nvtxExtModuleInfo_t;
int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* module);
[[gnu::used]] int (*InitializeInjectionNvtxExtension_fnptr)(nvtxExtModuleInfo_t*) =
    InitializeInjectionNvtxExtension;
}
