/* SPDX-License-Identifier: Apache-2.0 */
// The shape-keyed LRU cache of cuDNN descriptors and chosen algorithms.
#pragma once

#include "primitive_cache.h"

namespace dtp::cudnn {

using dtp::CacheEntry;
using dtp::PrimitiveCache;

} // namespace dtp::cudnn
