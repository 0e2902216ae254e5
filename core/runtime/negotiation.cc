// SPDX-License-Identifier: Apache-2.0
#include "runtime/negotiation.h"

#include "runtime/wire.h"

namespace dt {

namespace {

void put_sig(wire::Writer &w, const Signature &s)
{
    w.put<uint8_t>(static_cast<uint8_t>(s.kind));
    w.put<uint8_t>(static_cast<uint8_t>(s.dtype));
    w.put<uint8_t>(static_cast<uint8_t>(s.op));
    w.put<uint64_t>(s.count);
    w.put<int32_t>(s.root);
    w.put<uint32_t>(s.group);
    w.put<uint8_t>(static_cast<uint8_t>(s.memory));
}

Signature get_sig(wire::Reader &r)
{
    Signature s;
    auto kind = r.get<uint8_t>();
    auto dtype = r.get<uint8_t>();
    auto op = r.get<uint8_t>();
    // Join is the engine's own and never travels as a signature.
    if (kind > static_cast<uint8_t>(OpKind::alltoallv) ||
        kind == static_cast<uint8_t>(OpKind::join) || dtype >= DT_DTYPE_COUNT_ ||
        op >= DT_REDUCE_OP_COUNT_)
        throw_error(DT_ERR_PROTOCOL, "malformed negotiation message: bad signature");
    s.kind = static_cast<OpKind>(kind);
    s.dtype = static_cast<dt_dtype_t>(dtype);
    s.op = static_cast<dt_reduce_op_t>(op);
    s.count = r.get<uint64_t>();
    s.root = r.get<int32_t>();
    s.group = r.get<uint32_t>();
    auto memory = r.get<uint8_t>();
    // Only resolved types travel: the sender turned DT_MEMORY_AUTO into host or device.
    if (memory != DT_MEMORY_HOST && memory != DT_MEMORY_DEVICE)
        throw_error(DT_ERR_PROTOCOL, "malformed negotiation message: bad signature (memory type ",
                    int{memory}, ")");
    s.memory = static_cast<dt_memory_type_t>(memory);
    return s;
}

} // namespace

std::vector<uint8_t> encode(const std::vector<Record> &records)
{
    wire::Writer w;
    w.put<uint32_t>(static_cast<uint32_t>(records.size()));
    for (const auto &rec : records) {
        w.put<uint8_t>(static_cast<uint8_t>(rec.type));
        if (rec.type == Record::Type::request) {
            w.put_string(rec.name);
            put_sig(w, rec.sig);
            if (rec.sig.group != 0) {
                w.put<uint32_t>(static_cast<uint32_t>(rec.members.size()));
                for (int32_t m : rec.members)
                    w.put<int32_t>(m);
            }
            w.put<uint64_t>(rec.waited_us);
        }
    }
    return std::move(w.bytes());
}

std::vector<Record> decode_records(const std::vector<uint8_t> &bytes)
{
    wire::Reader r(bytes.data(), bytes.size());
    std::vector<Record> out;
    uint32_t n = r.get<uint32_t>();
    for (uint32_t i = 0; i < n; ++i) {
        Record rec;
        rec.type = static_cast<Record::Type>(r.get<uint8_t>());
        if (rec.type == Record::Type::request) {
            rec.name = r.get_string();
            rec.sig = get_sig(r);
            if (rec.sig.group != 0) {
                uint32_t count = r.get<uint32_t>();
                for (uint32_t k = 0; k < count; ++k)
                    rec.members.push_back(r.get<int32_t>());
            }
            rec.waited_us = r.get<uint64_t>();
        } else if (rec.type != Record::Type::join) {
            throw_error(DT_ERR_PROTOCOL, "malformed negotiation message: record type ",
                        static_cast<int>(rec.type));
        }
        out.push_back(std::move(rec));
    }
    r.finish();
    return out;
}

std::vector<uint8_t> encode(const ResponseList &list)
{
    wire::Writer w;
    w.put<uint32_t>(static_cast<uint32_t>(list.joined.size()));
    for (int32_t rank : list.joined)
        w.put<int32_t>(rank);
    w.put<uint32_t>(static_cast<uint32_t>(list.responses.size()));
    for (const auto &resp : list.responses) {
        w.put<uint8_t>(static_cast<uint8_t>(resp.type));
        switch (resp.type) {
        case Response::Type::ready:
            w.put_string(resp.name);
            put_sig(w, resp.sig);
            break;
        case Response::Type::error:
            w.put_string(resp.name);
            w.put<int32_t>(resp.status);
            w.put_string(resp.message);
            break;
        case Response::Type::join_done:
            w.put<int32_t>(resp.last_joined);
            break;
        }
    }
    return std::move(w.bytes());
}

ResponseList decode_responses(const std::vector<uint8_t> &bytes)
{
    wire::Reader r(bytes.data(), bytes.size());
    ResponseList list;
    uint32_t joined = r.get<uint32_t>();
    for (uint32_t i = 0; i < joined; ++i)
        list.joined.push_back(r.get<int32_t>());
    uint32_t n = r.get<uint32_t>();
    for (uint32_t i = 0; i < n; ++i) {
        Response resp;
        resp.type = static_cast<Response::Type>(r.get<uint8_t>());
        switch (resp.type) {
        case Response::Type::ready:
            resp.name = r.get_string();
            resp.sig = get_sig(r);
            break;
        case Response::Type::error:
            resp.name = r.get_string();
            resp.status = r.get<int32_t>();
            resp.message = r.get_string();
            break;
        case Response::Type::join_done:
            resp.last_joined = r.get<int32_t>();
            break;
        default:
            throw_error(DT_ERR_PROTOCOL, "malformed negotiation message: response type ",
                        static_cast<int>(resp.type));
        }
        list.responses.push_back(std::move(resp));
    }
    r.finish();
    return list;
}

} // namespace dt
