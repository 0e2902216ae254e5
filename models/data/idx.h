/* SPDX-License-Identifier: Apache-2.0 */
// Reader of IDX files (the format of MNIST and Fashion-MNIST), gzip-compressed or not.
//
// An IDX file is a 4-byte magic (0, 0, element type, number of dimensions), the
// dimensions as big-endian uint32, then the elements in row-major order. Only unsigned
// bytes (type 0x08) are needed for images and labels, and only they are accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::models {

struct IdxArray {
    std::vector<uint32_t> dims;
    std::vector<uint8_t> data; // product(dims) elements
};

// Reads the whole file (through zlib, which reads plain files too). Reads at most
// max_items along the first dimension when max_items > 0, to load a subset quickly.
// Throws InputError naming the path for a missing file, a directory in its place, a wrong
// magic, an unsupported element type, dimensions whose product overflows, a truncated
// file (a header that declares more data than the file holds is refused before that much
// is allocated), or a damaged gzip stream (where in the file, or that its checksum is
// wrong).
IdxArray read_idx(const std::string &path, size_t max_items = 0);

} // namespace dt::models
