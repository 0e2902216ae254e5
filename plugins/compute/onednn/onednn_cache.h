/* SPDX-License-Identifier: Apache-2.0 */
// The shape-keyed LRU cache of oneDNN primitives and their scratch memory.
#pragma once

#include "primitive_cache.h"

namespace dtp::onednn {

using dtp::CacheEntry;
using dtp::PrimitiveCache;

} // namespace dtp::onednn
