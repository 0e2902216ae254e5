// SPDX-License-Identifier: Apache-2.0
// Encoding of the records a rank sends the coordinator and of the responses it answers
// with: every kind and field survives a round trip, and input that is truncated, longer
// than its content, or otherwise malformed is refused as DT_ERR_PROTOCOL (never a crash or
// an overread; the sanitizer build checks the latter).
#include "runtime/negotiation.h"

#include "runtime/error.h"

#include "expect_protocol_error.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace dt {
namespace {

using test::expect_protocol_error;

// Decoding must either succeed or fail with DT_ERR_PROTOCOL; any other exception (a
// length_error, bad_alloc) would mean a length was trusted before it was checked.
template <typename F>
bool decodes_or_refuses(F f)
{
    try {
        f();
        return true;
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_PROTOCOL) << e.what();
        return false;
    }
}

// An exact-size copy, so that a read one byte past the end lands outside the allocation
// (which AddressSanitizer reports; a vector's spare capacity would hide it).
std::vector<uint8_t> prefix(const std::vector<uint8_t> &bytes, size_t n)
{
    return std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
}

Signature sig(OpKind kind, dt_dtype_t dtype, dt_reduce_op_t op, uint64_t count, int32_t root,
              uint32_t group)
{
    Signature s;
    s.kind = kind;
    s.dtype = dtype;
    s.op = op;
    s.count = count;
    s.root = root;
    s.group = group;
    return s;
}

Record request(std::string name, Signature s)
{
    Record r;
    r.type = Record::Type::request;
    r.name = std::move(name);
    r.sig = s;
    return r;
}

Record join()
{
    Record r;
    r.type = Record::Type::join;
    return r;
}

void expect_same(const std::vector<Record> &a, const std::vector<Record> &b)
{
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].type, b[i].type) << i;
        EXPECT_EQ(a[i].name, b[i].name) << i;
        EXPECT_EQ(a[i].sig, b[i].sig) << i;
        EXPECT_EQ(a[i].members, b[i].members) << i;
        EXPECT_EQ(a[i].waited_us, b[i].waited_us) << i;
    }
}

void expect_same(const ResponseList &a, const ResponseList &b)
{
    EXPECT_EQ(a.joined, b.joined);
    ASSERT_EQ(a.responses.size(), b.responses.size());
    for (size_t i = 0; i < a.responses.size(); ++i) {
        const Response &x = a.responses[i];
        const Response &y = b.responses[i];
        EXPECT_EQ(x.type, y.type) << i;
        EXPECT_EQ(x.name, y.name) << i;
        EXPECT_EQ(x.sig, y.sig) << i;
        EXPECT_EQ(x.status, y.status) << i;
        EXPECT_EQ(x.message, y.message) << i;
        EXPECT_EQ(x.last_joined, y.last_joined) << i;
    }
}

// Names a user may pass: empty, embedded NUL, bytes that are not UTF-8, quotes, long.
std::vector<std::string> odd_names()
{
    return {"", std::string("a\0b", 3), "\xff\xfe\x80", "grad/é 'x'\n", std::string(70000, 'n')};
}

std::vector<Record> sample_records()
{
    std::vector<Record> out;
    const OpKind kinds[] = {OpKind::allreduce, OpKind::broadcast, OpKind::allgather,
                            OpKind::reduce_scatter, OpKind::alltoall, OpKind::barrier};
    int i = 0;
    for (OpKind k : kinds) {
        ++i;
        out.push_back(request("op" + std::to_string(i),
                              sig(k, static_cast<dt_dtype_t>(i % DT_DTYPE_COUNT_),
                                  static_cast<dt_reduce_op_t>(i % DT_REDUCE_OP_COUNT_),
                                  uint64_t(1) << (10 * i), i - 3, static_cast<uint32_t>(i))));
        // A group's request carries its members (i ranks, i being the group id here).
        for (int m = 0; m < i; ++m)
            out.back().members.push_back(m * 3);
        out.back().waited_us = uint64_t(i) * 1000003;
    }
    // The uneven kinds, appended after join: they travel too.
    out.push_back(request("gv", sig(OpKind::allgatherv, DT_FLOAT32, DT_SUM, 0, 0, 0)));
    out.push_back(request("av", sig(OpKind::alltoallv, DT_INT8, DT_SUM, 0, 0, 2)));
    out.push_back(join());
    for (const auto &name : odd_names())
        out.push_back(request(name, sig(OpKind::allreduce, DT_INT64, DT_PROD,
                                        std::numeric_limits<uint64_t>::max(),
                                        std::numeric_limits<int32_t>::min(),
                                        std::numeric_limits<uint32_t>::max())));
    out.back().waited_us = std::numeric_limits<uint64_t>::max();
    return out;
}

ResponseList sample_responses()
{
    ResponseList list;
    list.joined = {0, 3, std::numeric_limits<int32_t>::max()};
    Response ready;
    ready.type = Response::Type::ready;
    ready.name = "grad.w";
    ready.sig = sig(OpKind::broadcast, DT_BFLOAT16, DT_SUM, 77, 2, 5);
    list.responses.push_back(ready);
    Response error;
    error.type = Response::Type::error;
    error.name = std::string("x\0y", 3);
    error.status = DT_ERR_MISMATCH;
    error.message = "allreduce 'x': ranks disagree on dtype: rank 0 float32, rank 1 float64";
    list.responses.push_back(error);
    Response done;
    done.type = Response::Type::join_done;
    done.last_joined = 2;
    list.responses.push_back(done);
    for (const auto &name : odd_names()) {
        Response r;
        r.type = Response::Type::error;
        r.name = name;
        r.status = std::numeric_limits<int32_t>::min();
        r.message = name;
        list.responses.push_back(r);
    }
    return list;
}

TEST(Negotiation, EmptyListsRoundTrip)
{
    std::vector<uint8_t> records = encode(std::vector<Record>{});
    EXPECT_EQ(records.size(), 4u);
    EXPECT_TRUE(decode_records(records).empty());
    std::vector<uint8_t> responses = encode(ResponseList{});
    EXPECT_EQ(responses.size(), 8u);
    ResponseList back = decode_responses(responses);
    EXPECT_TRUE(back.responses.empty());
    EXPECT_TRUE(back.joined.empty());
}

TEST(Negotiation, EveryRecordKindAndFieldRoundTrips)
{
    const std::vector<Record> records = sample_records();
    expect_same(decode_records(encode(records)), records);
}

TEST(Negotiation, TheMemoryTypeRoundTripsAndOnlyHostOrDeviceDecode)
{
    Signature s = sig(OpKind::allreduce, DT_FLOAT32, DT_SUM, 4, 0, 0);
    s.memory = DT_MEMORY_DEVICE;
    const std::vector<Record> records{request("n", s)};
    const std::vector<uint8_t> good = encode(records);
    expect_same(decode_records(good), records);
    // The memory byte is the signature's last: kind, dtype, op (3), count (8), root (4),
    // group (4), after count (4), type (1), name length (4) and name (1); the wait (8)
    // follows it.
    const size_t memory_at = 10 + 3 + 8 + 4 + 4;
    ASSERT_EQ(good.size(), memory_at + 1 + 8);
    for (uint8_t value : {uint8_t{DT_MEMORY_AUTO}, uint8_t{DT_MEMORY_TYPE_COUNT_}, uint8_t{0xff}}) {
        std::vector<uint8_t> bytes = good;
        bytes[memory_at] = value;
        expect_protocol_error([&] { decode_records(bytes); }, "bad signature");
    }
}

TEST(Negotiation, EveryResponseKindAndFieldRoundTrips)
{
    const ResponseList list = sample_responses();
    expect_same(decode_responses(encode(list)), list);
}

TEST(Negotiation, AJoinRecordCarriesNoNameOrSignature)
{
    // Only the type byte goes on the wire, so whatever else the record holds is dropped.
    Record r = request("ignored", sig(OpKind::allreduce, DT_INT8, DT_MAX, 9, 1, 1));
    r.type = Record::Type::join;
    std::vector<uint8_t> bytes = encode(std::vector<Record>{r});
    EXPECT_EQ(bytes.size(), 5u);
    std::vector<Record> back = decode_records(bytes);
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].type, Record::Type::join);
    EXPECT_EQ(back[0].name, "");
    EXPECT_EQ(back[0].sig, Signature{});
}

TEST(Negotiation, LargeCountsRoundTrip)
{
    std::vector<Record> records;
    ResponseList list;
    for (int i = 0; i < 50000; ++i) {
        records.push_back(i % 7 == 0 ? join()
                                     : request("layer." + std::to_string(i),
                                               sig(OpKind::allreduce, DT_FLOAT16, DT_AVG,
                                                   uint64_t(i) * 1000003, 0, 0)));
        list.joined.push_back(i);
        Response r;
        r.type = Response::Type::ready;
        r.name = "layer." + std::to_string(i);
        r.sig = records.back().sig;
        list.responses.push_back(r);
    }
    expect_same(decode_records(encode(records)), records);
    expect_same(decode_responses(encode(list)), list);
}

TEST(Negotiation, EveryTruncationIsRefused)
{
    const std::vector<uint8_t> records = encode(sample_records());
    for (size_t n = 0; n < records.size(); n += (n < 64 || records.size() - n < 64) ? 1 : 97)
        expect_protocol_error([&] { decode_records(prefix(records, n)); },
                              "malformed negotiation message");
    const std::vector<uint8_t> responses = encode(sample_responses());
    for (size_t n = 0; n < responses.size(); n += (n < 64 || responses.size() - n < 64) ? 1 : 97)
        expect_protocol_error([&] { decode_responses(prefix(responses, n)); },
                              "malformed negotiation message");
}

TEST(Negotiation, BytesAfterTheLastEntryAreRefused)
{
    // A message longer than what it declares means sender and receiver disagree on the
    // format (or on the length sent ahead of it); acting on its first part would hide that.
    std::vector<uint8_t> records = encode(sample_records());
    records.push_back(0);
    expect_protocol_error([&] { decode_records(records); }, "1 byte");
    std::vector<uint8_t> responses = encode(sample_responses());
    responses.insert(responses.end(), {1, 2, 3});
    expect_protocol_error([&] { decode_responses(responses); }, "3 bytes");
    // Two valid messages back to back are not one.
    std::vector<uint8_t> twice = encode(std::vector<Record>{join()});
    twice.insert(twice.end(), twice.begin(), twice.end());
    expect_protocol_error([&] { decode_records(twice); }, "malformed negotiation message");
}

TEST(Negotiation, HugeDeclaredCountsAreRefusedWithoutAllocatingThem)
{
    // 4 G records (or joined ranks) declared with nothing behind the count.
    const std::vector<uint8_t> four_g = {0xff, 0xff, 0xff, 0xff};
    expect_protocol_error([&] { decode_records(four_g); }, "at offset 4 of 4");
    expect_protocol_error([&] { decode_responses(four_g); }, "at offset 4 of 4");
    // A request whose name claims 4 GiB.
    const std::vector<uint8_t> long_name = {1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 'a'};
    expect_protocol_error([&] { decode_records(long_name); }, "needs 4294967295 more bytes");
}

TEST(Negotiation, UnknownTypesAndEnumValuesAreRefused)
{
    for (uint8_t type : {0, 3, 255})
        expect_protocol_error([&] { decode_records({1, 0, 0, 0, type}); },
                              "record type " + std::to_string(type));
    for (uint8_t type : {0, 4, 255})
        expect_protocol_error([&] { decode_responses({0, 0, 0, 0, 1, 0, 0, 0, type}); },
                              "response type " + std::to_string(type));

    // Byte offsets of the signature's enums in a one-request message named "n": count (4),
    // type (1), name length (4), name (1), then kind, dtype, op.
    const std::vector<uint8_t> good =
        encode(std::vector<Record>{request("n", sig(OpKind::barrier, DT_INT64, DT_PROD, 1, 0, 0))});
    ASSERT_EQ(decode_records(good).size(), 1u) << "the largest valid values decode";
    const size_t kind_at = 10;
    const std::pair<size_t, uint8_t> bad[] = {
        {kind_at, static_cast<uint8_t>(OpKind::join)}, // join is a record type, not a kind
        {kind_at, 0xff},
        {kind_at + 1, DT_DTYPE_COUNT_},
        {kind_at + 1, 0xff},
        {kind_at + 2, DT_REDUCE_OP_COUNT_},
        {kind_at + 2, 0xff},
    };
    for (auto [at, value] : bad) {
        std::vector<uint8_t> bytes = good;
        bytes[at] = value;
        expect_protocol_error([&] { decode_records(bytes); }, "bad signature");
    }
}

TEST(Negotiation, RandomCorruptionIsDecodedOrRefusedNeverMore)
{
    // Flipped, inserted and dropped bytes in valid messages, and random buffers: decoding
    // may succeed (a flipped byte inside a name is still a valid message) but may only
    // ever fail with DT_ERR_PROTOCOL.
    std::mt19937 rng(12345);
    // Without the 70000-byte names, so that most of each message is structure.
    std::vector<Record> records = sample_records();
    std::erase_if(records, [](const Record &r) { return r.name.size() > 100; });
    ResponseList list = sample_responses();
    std::erase_if(list.responses, [](const Response &r) { return r.name.size() > 100; });
    const std::vector<uint8_t> bases[] = {encode(records), encode(list),
                                          encode(std::vector<Record>{join(), join()})};
    int refused = 0;
    for (int round = 0; round < 3000; ++round) {
        const auto &base = bases[round % 3];
        std::vector<uint8_t> bytes = base;
        switch (rng() % 4) {
        case 0: bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1 + rng() % 255); break;
        case 1: bytes.insert(bytes.begin() + rng() % bytes.size(), static_cast<uint8_t>(rng())); break;
        case 2: bytes.erase(bytes.begin() + rng() % bytes.size()); break;
        case 3:
            bytes.resize(rng() % 64);
            for (auto &b : bytes)
                b = static_cast<uint8_t>(rng());
            break;
        }
        const std::vector<uint8_t> exact = prefix(bytes, bytes.size());
        bool a = decodes_or_refuses([&] { decode_records(exact); });
        bool b = decodes_or_refuses([&] { decode_responses(exact); });
        refused += !a + !b;
    }
    EXPECT_GT(refused, 1000) << "corruption should mostly be detected";
}

} // namespace
} // namespace dt
