/* SPDX-License-Identifier: Apache-2.0 */
// What the tests of CUDA kernels on the CPU (cuda_emu) share: host memory standing for
// device memory, with guards, a guard page and a chosen alignment; reference float16 and bfloat16
// conversions of their own; test values with the edge cases; and a runner that launches
// in each order of blocks and threads and requires the same bits from every one.
#pragma once

#include "cuda_emu.h"

#include <gtest/gtest.h>

#include <disttrain/plugin/common.h>

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace emu_check {

using cuda_emu::Order;

inline const float kNaN = std::numeric_limits<float>::quiet_NaN();
inline const float kInf = std::numeric_limits<float>::infinity();

// The element types, with reference conversions of their own: float16 through GCC's
// _Float16 (IEEE, round to nearest even), bfloat16 by its bits. Neither uses CUDA's.
struct F32 {
    using T = float;
    static constexpr int code = DTP_FLOAT32;
    static constexpr const char *name = "f32";
    static float get(T v) { return v; }
    static T put(float v) { return v; }
};
struct F16 {
    using T = uint16_t;
    static constexpr int code = DTP_FLOAT16;
    static constexpr const char *name = "f16";
    static float get(T h) { return float(std::bit_cast<_Float16>(h)); }
    static T put(float v) { return std::bit_cast<T>(static_cast<_Float16>(v)); }
};
struct BF16 {
    using T = uint16_t;
    static constexpr int code = DTP_BFLOAT16;
    static constexpr const char *name = "bf16";
    static float get(T b) { return std::bit_cast<float>(uint32_t(b) << 16); }
    static T put(float v)
    {
        const uint32_t u = std::bit_cast<uint32_t>(v);
        if (std::isnan(v))
            return T((u >> 16) | 0x40);                 // quiet, same sign
        return T((u + 0x7fff + ((u >> 16) & 1)) >> 16); // to nearest, ties to even
    }
};

// The same value: the same bits, or both NaN (CUDA's conversions write one NaN of their
// own, the reference's keep the payload).
template <typename E>
bool same(typename E::T got, typename E::T want)
{
    if (std::isnan(E::get(got)) && std::isnan(E::get(want)))
        return true;
    return std::memcmp(&got, &want, sizeof got) == 0;
}
inline bool same_f32(float got, float want) { return same<F32>(got, want); }

inline std::string show(float v)
{
    char s[64];
    std::snprintf(s, sizeof s, "%a (0x%08x)", double(v), std::bit_cast<uint32_t>(v));
    return s;
}

// Host memory standing for device memory: `bytes` that start on a 16-byte boundary or
// `misalign` bytes past one, between guard bytes that no kernel may touch (at least
// kGuardBytes before; after, up to the next 16-byte boundary), and then a page the
// process may not touch at all: a write outside the bytes shows in guards_intact(), and
// an access past the guards (a whole 16-byte pack past the end, say) faults at once. The
// bytes start as the guard pattern too, so one a kernel skips shows.
constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xa5;

class DeviceBytes {
  public:
    DeviceBytes(size_t bytes, size_t misalign) : bytes_(bytes)
    {
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        const size_t tail = (misalign + bytes + 15) / 16 * 16; // 16-aligned start to the page
        mapped_ = (kGuardBytes + tail + page - 1) / page * page + page;
        void *p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED)
            throw std::bad_alloc();
        base_ = static_cast<unsigned char *>(p);
        guarded_ = mapped_ - page;
        mprotect(base_ + guarded_, page, PROT_NONE);
        std::memset(base_, kGuardByte, guarded_);
        start_ = base_ + guarded_ - tail + misalign;
    }
    ~DeviceBytes() { munmap(base_, mapped_); }
    DeviceBytes(const DeviceBytes &) = delete;
    DeviceBytes &operator=(const DeviceBytes &) = delete;

    unsigned char *data() const { return start_; }
    size_t size() const { return bytes_; }
    // Nothing outside the bytes was written.
    bool guards_intact() const
    {
        for (const unsigned char *q = base_; q < base_ + guarded_; ++q)
            if ((q < start_ || q >= start_ + bytes_) && *q != kGuardByte)
                return false;
        return true;
    }

  private:
    size_t bytes_, mapped_, guarded_;
    unsigned char *base_, *start_;
};

// n elements of T in DeviceBytes, misaligned by one element where asked.
template <typename T>
class DeviceArray {
  public:
    DeviceArray(size_t n, bool misaligned)
        : n_(n), bytes_(n * sizeof(T), misaligned ? sizeof(T) : 0)
    {
    }
    explicit DeviceArray(const std::vector<T> &v, bool misaligned = false)
        : DeviceArray(v.size(), misaligned)
    {
        if (!v.empty())
            std::memcpy(data(), v.data(), v.size() * sizeof(T));
    }

    T *data() { return reinterpret_cast<T *>(bytes_.data()); }
    std::vector<T> values() const
    {
        std::vector<T> v(n_);
        if (n_ != 0)
            std::memcpy(v.data(), bytes_.data(), n_ * sizeof(T));
        return v;
    }
    bool guards_intact() const { return bytes_.guards_intact(); }

  private:
    size_t n_;
    DeviceBytes bytes_;
};

template <typename T>
bool same_bits(const std::vector<T> &a, const std::vector<T> &b)
{
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <typename... V>
std::vector<unsigned char> bytes_of(const std::tuple<V...> &t)
{
    std::vector<unsigned char> out;
    std::apply(
        [&](const auto &...v) {
            (out.insert(out.end(), reinterpret_cast<const unsigned char *>(v.data()),
                        reinterpret_cast<const unsigned char *>(v.data() + v.size())),
             ...);
        },
        t);
    return out;
}

inline const char *order_name(Order order)
{
    return order == Order::forward ? "forward" : order == Order::reverse ? "reverse" : "shuffle";
}

// Runs `once` (which sets up its own buffers, launches and returns a tuple of what the
// kernel wrote) with blocks and threads in each order; every order must write the same
// bits. Returns the forward order's result.
template <typename F>
auto in_every_order(F &&once,
                    std::initializer_list<Order> others = {Order::reverse, Order::shuffle})
{
    cuda_emu::set_order(Order::forward);
    const auto first = once();
    for (const Order order : others) {
        cuda_emu::set_order(order);
        const auto again = once();
        EXPECT_TRUE(bytes_of(again) == bytes_of(first))
            << "blocks and threads in " << order_name(order)
            << " order wrote other bits than in forward order";
    }
    cuda_emu::set_order(Order::forward);
    return first;
}

#define EXPECT_RAN(call) EXPECT_EQ((call), 0) << cuda_emu::last_message()

// Values worth testing: signed zeros, subnormals of float and float16, the largest values,
// infinities, NaN, ties of the float16 and bfloat16 roundings and values just past them.
inline std::vector<float> edge_values()
{
    // clang-format off
    return {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, -2.5f,
            0x1p-149f, -0x1p-149f, 0x1p-126f,                // float subnormals, smallest normal
            FLT_MAX, -FLT_MAX, kInf, -kInf, kNaN,
            1 + 0x1p-11f, 1 + 3 * 0x1p-11f,                  // float16 ties: down, up to even
            -(1 + 0x1p-8f), 1 + 3 * 0x1p-8f, 1 + 0x1.8p-8f,  // bfloat16 ties, and past one
            65504.0f, 65520.0f, -65519.0f,                   // float16's largest, inf, largest
            0x1p-24f, 0x1p-25f, -3 * 0x1p-25f};              // float16 subnormal and its ties
    // clang-format on
}

enum class Values {
    edges,  // every third an edge value, the others pseudo-random in [-4, 4]
    finite, // pseudo-random in [-4, 4]
};

// n test values of element type E (rounded to it); seed varies them.
template <typename E>
std::vector<typename E::T> test_values(size_t n, uint32_t seed, Values kind = Values::edges)
{
    const std::vector<float> edges = edge_values();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
    std::vector<typename E::T> v(n);
    for (size_t i = 0; i < n; ++i) {
        const float f = uniform(rng);
        v[i] =
            E::put(kind == Values::edges && i % 3 == 0 ? edges[(i / 3 + seed) % edges.size()] : f);
    }
    return v;
}

} // namespace emu_check
