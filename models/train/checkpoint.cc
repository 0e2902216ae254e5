// SPDX-License-Identifier: Apache-2.0
#include "train/checkpoint.h"

#include "common/error.h"
#include "train/fault.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace dt::models {
namespace {

constexpr char kMagic[8] = {'D', 'T', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = sizeof kMagic + 4 + 4 + 8;

template <typename T>
void append(std::vector<uint8_t> &out, const T &v)
{
    // resize + memcpy rather than insert(): GCC 12 warns falsely (-Warray-bounds) on
    // inserting from a small object.
    const size_t at = out.size();
    out.resize(at + sizeof v);
    std::memcpy(out.data() + at, &v, sizeof v);
}

// Reads fields from a byte span, refusing to run past its end.
class Reader {
public:
    Reader(std::span<const uint8_t> data, const std::string &origin)
        : data_(data), origin_(origin) {}

    template <typename T>
    T read(const char *what)
    {
        T v;
        std::memcpy(&v, take(sizeof v, what).data(), sizeof v);
        return v;
    }
    std::span<const uint8_t> take(size_t n, const char *what)
    {
        if (n > data_.size() - pos_)
            throw_input_error("checkpoint ", origin_, " is truncated: the ", what, " needs ",
                              n, " bytes at offset ", pos_, " but only ",
                              data_.size() - pos_, " remain; delete it or resume from "
                              "another checkpoint folder");
        auto s = data_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    size_t pos() const { return pos_; }

private:
    std::span<const uint8_t> data_;
    const std::string &origin_;
    size_t pos_ = 0;
};

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd()
    {
        if (fd_ >= 0)
            ::close(fd_);
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    int get() const { return fd_; }
    int release()
    {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }

private:
    int fd_;
};

[[noreturn]] void fail(const std::string &what, const std::string &path)
{
    throw std::runtime_error(cat("checkpoint: ", what, " ", path, ": ",
                                 std::strerror(errno)));
}

void write_all(int fd, const uint8_t *p, size_t n, const std::string &path)
{
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            fail("cannot write", path);
        }
        p += w;
        n -= size_t(w);
    }
}

} // namespace

void CheckpointState::put_bytes(const std::string &name, const void *data, size_t bytes)
{
    const auto *p = static_cast<const uint8_t *>(data);
    entries_[name].assign(p, p + bytes);
}

const std::vector<uint8_t> &CheckpointState::bytes(const std::string &name) const
{
    auto it = entries_.find(name);
    if (it == entries_.end())
        throw_input_error("the checkpoint has no entry '", name,
                          "': it was written by another model or version");
    return it->second;
}

void CheckpointState::get_into(const std::string &name, void *out, size_t n) const
{
    const auto &b = bytes(name);
    if (b.size() != n)
        throw_input_error("checkpoint entry '", name, "' holds ", b.size(),
                          " bytes but this run needs ", n,
                          ": it was written for another model or configuration");
    std::memcpy(out, b.data(), n);
}

uint64_t CheckpointState::get_u64(const std::string &name) const
{
    uint64_t v;
    get_into(name, &v, sizeof v);
    return v;
}

double CheckpointState::get_f64(const std::string &name) const
{
    double v;
    get_into(name, &v, sizeof v);
    return v;
}

std::string CheckpointState::get_string(const std::string &name) const
{
    const auto &b = bytes(name);
    return std::string(b.begin(), b.end());
}

std::vector<uint8_t> CheckpointState::serialize() const
{
    std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
    append(out, kVersion);
    append(out, static_cast<uint32_t>(entries_.size()));
    uint64_t payload = 0;
    for (const auto &[name, data] : entries_)
        payload += 4 + name.size() + 8 + data.size();
    append(out, payload);
    out.reserve(out.size() + payload + 4);
    for (const auto &[name, data] : entries_) {
        append(out, static_cast<uint32_t>(name.size()));
        out.insert(out.end(), name.begin(), name.end());
        append(out, static_cast<uint64_t>(data.size()));
        out.insert(out.end(), data.begin(), data.end());
    }
    const uint32_t crc = static_cast<uint32_t>(crc32_z(0, out.data(), out.size()));
    append(out, crc);
    return out;
}

CheckpointState CheckpointState::deserialize(std::span<const uint8_t> file,
                                             const std::string &origin)
{
    Reader r(file, origin);
    auto magic = r.take(sizeof kMagic, "magic");
    if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0)
        throw_input_error("checkpoint ", origin, " is not a disttrain checkpoint (wrong "
                          "magic bytes)");
    const auto version = r.read<uint32_t>("format version");
    if (version != kVersion)
        throw_input_error("checkpoint ", origin, " has format version ", version,
                          "; this program reads version ", kVersion);
    const auto count = r.read<uint32_t>("entry count");
    const auto payload = r.read<uint64_t>("payload size");
    if (payload > file.size() || file.size() < kHeaderBytes + payload + 4)
        throw_input_error("checkpoint ", origin, " is truncated: ", file.size(),
                          " bytes where its header announces ", kHeaderBytes + payload + 4,
                          "; delete it or resume from another checkpoint folder");
    if (file.size() > kHeaderBytes + payload + 4)
        throw_input_error("checkpoint ", origin, " is corrupt: ",
                          file.size() - (kHeaderBytes + payload + 4),
                          " unexpected bytes after its payload");
    uint32_t stored;
    std::memcpy(&stored, file.data() + file.size() - 4, 4);
    const auto crc = static_cast<uint32_t>(crc32_z(0, file.data(), file.size() - 4));
    if (crc != stored)
        throw_input_error("checkpoint ", origin, " is corrupt: its crc32 is ", std::hex,
                          crc, " but the file records ", stored,
                          "; delete it or resume from another checkpoint folder");
    CheckpointState out;
    Reader body(file.first(file.size() - 4), origin);
    body.take(kHeaderBytes, "header");
    for (uint32_t i = 0; i < count; ++i) {
        const auto name_len = body.read<uint32_t>("entry name length");
        auto name = body.take(name_len, "entry name");
        const auto len = body.read<uint64_t>("entry length");
        auto data = body.take(len, "entry data");
        out.entries_[std::string(name.begin(), name.end())].assign(data.begin(), data.end());
    }
    return out;
}

std::string checkpoint_path(const std::string &dir)
{
    return (std::filesystem::path(dir) / "checkpoint.dtck").string();
}

void write_checkpoint(const std::string &dir, const CheckpointState &state)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error(cat("checkpoint: cannot create folder ", dir, ": ",
                                     ec.message()));
    const std::string path = checkpoint_path(dir), tmp = path + ".tmp";
    const std::vector<uint8_t> bytes = state.serialize();
    {
        Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (fd.get() < 0)
            fail("cannot create", tmp);
        // Half the file first, so a fault injected here leaves a torn temporary file.
        const size_t half = bytes.size() / 2;
        write_all(fd.get(), bytes.data(), half, tmp);
        fault_point(FaultPoint::checkpoint_write);
        write_all(fd.get(), bytes.data() + half, bytes.size() - half, tmp);
        if (::fsync(fd.get()) != 0)
            fail("cannot fsync", tmp);
        if (::close(fd.release()) != 0)
            fail("cannot close", tmp);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
        fail("cannot rename " + tmp + " to", path);
    // The rename is durable only once the folder's entry is on disk.
    Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() < 0 || ::fsync(dfd.get()) != 0)
        fail("cannot fsync folder", dir);
}

void check_checkpoint_folder(const std::string &dir)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw_input_error("--checkpoint-dir ", dir, ": cannot create the folder: ",
                          ec.message(), "; pass a folder this user can write to");
    // access() also says EROFS for a read-only file system, where root may write nothing.
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw_input_error("--checkpoint-dir ", dir, ": cannot write checkpoints there: ",
                          std::strerror(errno), "; pass a folder this user can write to");
}

bool read_checkpoint(const std::string &dir, CheckpointState &out)
{
    const std::string path = checkpoint_path(dir);
    auto refuse = [&](const std::string &why) {
        throw_input_error("checkpoint ", path, " ", why, "; nothing was overwritten: make "
                          "it a readable checkpoint or move it away, or use another "
                          "--checkpoint-dir");
    };
    // O_NONBLOCK: a FIFO in its place must not block the open; it is refused below.
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0) {
        const int err = errno;
        // Only a checkpoint that is not there means "start from the beginning": one that
        // cannot be read is refused, or the run would overwrite it.
        struct stat lst {};
        if (err == ENOENT && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
            refuse("is a symbolic link to a file that does not exist");
        if (err == ENOENT)
            return false;
        refuse(cat("cannot be opened: ", std::strerror(err)));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        refuse(cat("cannot be examined: ", std::strerror(errno)));
    if (S_ISDIR(st.st_mode))
        refuse("is a folder, not a checkpoint file");
    if (!S_ISREG(st.st_mode))
        refuse("is not a regular file");
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    // One byte more than its size, to see the end without growing the buffer.
    std::vector<uint8_t> bytes(size_t(st.st_size) + 1);
    size_t got = 0;
    for (;;) {
        if (got == bytes.size())
            bytes.resize(got + std::max<size_t>(got / 2, 1 << 16)); // it grew meanwhile
        const ssize_t r = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            refuse(cat("cannot be read: ", std::strerror(errno)));
        }
        if (r == 0)
            break;
        got += size_t(r);
    }
    bytes.resize(got);
    out = CheckpointState::deserialize(bytes, path);
    return true;
}

} // namespace dt::models
