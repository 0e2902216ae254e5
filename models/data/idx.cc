// SPDX-License-Identifier: Apache-2.0
#include "data/idx.h"

#include "common/error.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sys/stat.h>

namespace dt::models {
namespace {

constexpr uint8_t kTypeUnsignedByte = 0x08;
constexpr uint32_t kMaxDims = 4;

struct GzCloser {
    void operator()(gzFile_s *f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

constexpr const char *kFetchAgain = "; download the file again or reinstall the package";

// Why zlib failed, without the path it puts in front.
std::string gz_reason(gzFile f, const std::string &path, int &errnum)
{
    std::string msg = gzerror(f, &errnum);
    if (msg.rfind(path + ": ", 0) == 0)
        msg.erase(0, path.size() + 2);
    return msg;
}

// zlib decompresses ahead of the reads (a whole small file at the first one) and keeps
// nothing of a chunk that fails, so the damage need not be in what was being read: a
// checksum is found wrong only once the whole stream is decompressed, and other damage
// is located by how far into the file zlib got.
[[noreturn]] void gz_failed(gzFile f, const std::string &path, const char *what)
{
    int errnum = 0;
    const std::string reason = gz_reason(f, path, errnum);
    if (errnum == Z_ERRNO)
        throw_input_error(path, ": cannot read the ", what, ": ", reason);
    if (errnum == Z_BUF_ERROR) // a gzip stream cut short
        throw_input_error(path, ": truncated gzip stream while reading the ", what, " (",
                          reason, ")", kFetchAgain);
    if (reason == "incorrect data check" || reason == "incorrect length check")
        throw_input_error(path, ": damaged gzip file: the data it decompresses to does not "
                          "match the ", reason == "incorrect data check" ? "checksum" : "length",
                          " recorded at its end (", reason, ")", kFetchAgain);
    throw_input_error(path, ": damaged gzip stream at byte ", gzoffset(f), " of the file (",
                      reason, "), found while reading the ", what, kFetchAgain);
}

// Reads exactly n bytes, or throws: a short read means the file is truncated or its
// compressed stream is damaged.
void read_exact(gzFile f, const std::string &path, void *out, size_t n, const char *what)
{
    auto *dst = static_cast<uint8_t *>(out);
    size_t got = 0;
    while (got < n) {
        const size_t chunk = std::min<size_t>(n - got, size_t{1} << 30);
        const int r = gzread(f, dst + got, static_cast<unsigned>(chunk));
        if (r < 0)
            gz_failed(f, path, what);
        if (r == 0)
            throw_input_error(path, ": truncated: the ", what, " needs ", n,
                              " bytes but the file ends after ", got,
                              kFetchAgain);
        got += static_cast<size_t>(r);
    }
}

uint32_t big_endian(const uint8_t *p)
{
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

} // namespace

IdxArray read_idx(const std::string &path, size_t max_items)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw_input_error(path, ": ", std::strerror(errno),
                          "; install the Debian package dataset-fashion-mnist "
                          "(apt-get install dataset-fashion-mnist) or pass --data-dir");
    if (S_ISDIR(st.st_mode))
        throw_input_error(path, " is a directory, not an IDX file (gzip'd or plain); put the "
                          "file in its place or pass --data-dir naming the folder of the files");
    GzFile f(gzopen(path.c_str(), "rb"));
    if (!f)
        throw_input_error(path, ": cannot open: ", std::strerror(errno));
    gzbuffer(f.get(), 1 << 20);

    uint8_t magic[4];
    read_exact(f.get(), path, magic, sizeof magic, "IDX magic");
    if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > kMaxDims)
        throw_input_error(path, ": not an IDX file: magic bytes are ", int{magic[0]}, " ",
                          int{magic[1]}, " ", int{magic[2]}, " ", int{magic[3]},
                          ", expected 0 0 <type> <1..", kMaxDims, " dimensions>");
    if (magic[2] != kTypeUnsignedByte)
        throw_input_error(path, ": IDX element type 0x", std::hex, int{magic[2]},
                          " is not supported; only unsigned bytes (0x08) are");

    IdxArray out;
    for (int i = 0; i < magic[3]; ++i) {
        uint8_t dim[4];
        read_exact(f.get(), path, dim, sizeof dim, "IDX dimensions");
        out.dims.push_back(big_endian(dim));
    }
    const size_t header = 4 + 4 * out.dims.size();
    std::string shape;
    for (uint32_t d : out.dims)
        shape += (shape.empty() ? "" : " x ") + std::to_string(d);
    // The declared size, checked for overflow: a damaged header must not wrap around to a
    // small count and have the rest read as something else.
    size_t declared = 1;
    for (uint32_t d : out.dims)
        if (__builtin_mul_overflow(declared, size_t{d}, &declared))
            throw_input_error(path, ": its IDX header declares ", shape,
                              " elements, more than this machine can address; the file is "
                              "damaged or not an IDX file");
    if (max_items > 0 && out.dims[0] > max_items)
        out.dims[0] = static_cast<uint32_t>(max_items);
    size_t count = 1;
    for (uint32_t d : out.dims)
        count *= d; // at most `declared`
    // The size the header declares is checked against the file before anything that large
    // is allocated: a plain file's size is known; a gzip stream's is not, so it is read in
    // growing chunks, and memory follows the data actually there.
    auto truncated = [&](size_t got) {
        throw_input_error(path, ": truncated: its IDX header declares ", shape, " = ",
                          declared, " bytes of data",
                          count < declared ? cat(" (", count, " of them needed here)") : "",
                          " but the file ", gzdirect(f.get()) ? "holds" : "decompresses to",
                          " only ", got, " bytes after its header; download the file again "
                          "or reinstall the package");
    };
    if (gzdirect(f.get())) {
        const size_t after_header =
            size_t(st.st_size) > header ? size_t(st.st_size) - header : 0;
        if (S_ISREG(st.st_mode) && count > after_header)
            truncated(after_header);
        out.data.resize(count);
        read_exact(f.get(), path, out.data.data(), count, "data");
        return out;
    }
    size_t got = 0;
    while (got < count) {
        const size_t want =
            std::min({count - got, std::max<size_t>(got, size_t{1} << 20), size_t{1} << 30});
        out.data.resize(got + want);
        const int r = gzread(f.get(), out.data.data() + got, static_cast<unsigned>(want));
        if (r < 0)
            gz_failed(f.get(), path, "data");
        if (r == 0)
            truncated(got);
        got += size_t(r);
    }
    out.data.resize(got);
    return out;
}

} // namespace dt::models
