// call_addresses.hpp — the memory a CUDA copy or memset call names, read from
// its parameters: the copies and memsets themselves (1D, 2D, 3D, peer), and
// the calls that put a copy or memset into a graph as a node (explicitly built
// graphs, as XLA's command buffers build them). The collector looks the
// addresses up among the data objects, so the device records name the arrays
// they move.
#pragma once

#include <cupti.h>

#include "api_table.hpp"

namespace ferret::cupti {

struct call_addresses {
  const void* destination = nullptr;  // the first byte written
  const void* source = nullptr;       // the first byte read; null: none, or an array
};

/// True when `handling` names memory the collector reads with addresses_of.
bool names_objects(call_handling handling) noexcept;

/// The addresses in `params` (CUPTI's functionParams) of a call of `domain`
/// handled as `handling`. Arrays (cudaArray_t, CUarray) have no address: null.
call_addresses addresses_of(CUpti_CallbackDomain domain, call_handling handling, const void* params) noexcept;

}  // namespace ferret::cupti
