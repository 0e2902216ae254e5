/* SPDX-License-Identifier: Apache-2.0 */
// Byte encoding of negotiation messages: little-endian integers and length-prefixed
// strings. The reader checks every length against what is left, so a corrupt message is
// a DT_ERR_PROTOCOL error, never an overread.
#pragma once

#include "runtime/error.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace dt::wire {

class Writer {
public:
    template <typename T>
    void put(T value)
    {
        static_assert(std::is_trivially_copyable_v<T>);
        const auto *p = reinterpret_cast<const uint8_t *>(&value);
        bytes_.insert(bytes_.end(), p, p + sizeof(T));
    }
    void put_string(const std::string &s)
    {
        put<uint32_t>(static_cast<uint32_t>(s.size()));
        bytes_.insert(bytes_.end(), s.begin(), s.end());
    }
    std::vector<uint8_t> &bytes() { return bytes_; }

private:
    std::vector<uint8_t> bytes_;
};

class Reader {
public:
    Reader(const uint8_t *data, size_t size) : data_(data), size_(size) {}

    template <typename T>
    T get()
    {
        need(sizeof(T));
        T value;
        std::memcpy(&value, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return value;
    }
    std::string get_string()
    {
        auto len = get<uint32_t>();
        need(len);
        std::string s(reinterpret_cast<const char *>(data_ + pos_), len);
        pos_ += len;
        return s;
    }
    bool done() const { return pos_ == size_; }
    // Refuses bytes after the last field: a message longer than its content means the
    // sender wrote another format, or another length ahead of it.
    void finish() const
    {
        if (!done())
            throw_error(DT_ERR_PROTOCOL, "malformed negotiation message: ", size_ - pos_,
                        size_ - pos_ == 1 ? " byte" : " bytes", " after its end at offset ",
                        pos_, " of ", size_);
    }

private:
    void need(size_t n)
    {
        if (n > size_ - pos_)
            throw_error(DT_ERR_PROTOCOL, "malformed negotiation message: needs ", n,
                        " more bytes at offset ", pos_, " of ", size_);
    }
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
};

} // namespace dt::wire
