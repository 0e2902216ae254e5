// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/store_protocol.h"

#include "runtime/error.h"

namespace dt::bootstrap::proto {

const char *op_name(Op op)
{
    switch (op) {
    case Op::set: return "set";
    case Op::get: return "get";
    case Op::add: return "add";
    case Op::wait: return "wait";
    }
    return "unknown";
}

namespace {

// Appends big-endian integers and length-prefixed strings to a frame under construction.
class Writer {
public:
    Writer() { buf_.resize(4); } // room for the length prefix
    void u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
    void u32(uint32_t v)
    {
        for (int shift = 24; shift >= 0; shift -= 8)
            buf_.push_back(static_cast<char>((v >> shift) & 0xff));
    }
    void u64(uint64_t v)
    {
        for (int shift = 56; shift >= 0; shift -= 8)
            buf_.push_back(static_cast<char>((v >> shift) & 0xff));
    }
    void str(std::string_view s)
    {
        u32(static_cast<uint32_t>(s.size()));
        buf_.append(s);
    }
    std::string finish()
    {
        uint32_t body = static_cast<uint32_t>(buf_.size() - 4);
        for (int i = 0; i < 4; ++i)
            buf_[i] = static_cast<char>((body >> (24 - 8 * i)) & 0xff);
        return std::move(buf_);
    }

private:
    std::string buf_;
};

// Reads fields off a frame body, checking every length against what is left.
class Parser {
public:
    explicit Parser(std::string_view body) : rest_(body) {}

    uint8_t u8(const char *field) { return static_cast<uint8_t>(take(1, field)[0]); }
    uint32_t u32(const char *field)
    {
        std::string_view b = take(4, field);
        uint32_t v = 0;
        for (char c : b)
            v = (v << 8) | static_cast<uint8_t>(c);
        return v;
    }
    uint64_t u64(const char *field)
    {
        std::string_view b = take(8, field);
        uint64_t v = 0;
        for (char c : b)
            v = (v << 8) | static_cast<uint8_t>(c);
        return v;
    }
    std::string str(const char *field, size_t cap)
    {
        uint32_t len = u32(field);
        if (len > cap)
            throw_error(DT_ERR_PROTOCOL, field, " of ", len, " bytes exceeds the limit of ",
                        cap, " bytes");
        return std::string(take(len, field));
    }
    void end()
    {
        if (!rest_.empty())
            throw_error(DT_ERR_PROTOCOL, rest_.size(), " unexpected bytes at the end of a frame");
    }

private:
    std::string_view take(size_t n, const char *field)
    {
        if (n > rest_.size())
            throw_error(DT_ERR_PROTOCOL, "frame ends inside its ", field, " (", n,
                        " bytes needed, ", rest_.size(), " left)");
        std::string_view out = rest_.substr(0, n);
        rest_.remove_prefix(n);
        return out;
    }

    std::string_view rest_;
};

void check_value(const std::string &key, const std::string &value)
{
    if (value.size() > kMaxValueBytes)
        throw_error(DT_ERR_INVALID_ARGUMENT, "the value for store key '", key, "' is ",
                    value.size(), " bytes; the rendezvous store holds values up to ",
                    kMaxValueBytes, " bytes");
}

std::string key_for_message(std::string_view key)
{
    return key.size() <= 80 ? std::string(key) : cat(key.substr(0, 80), "...");
}

} // namespace

void check_key(const std::string &key)
{
    if (key.empty())
        throw_error(DT_ERR_INVALID_ARGUMENT, "store keys must not be empty");
    if (key.size() > kMaxKeyBytes)
        throw_error(DT_ERR_INVALID_ARGUMENT, "store key '", key_for_message(key), "' is ",
                    key.size(), " bytes; keys are limited to ", kMaxKeyBytes, " bytes");
}

std::string encode_request(const Request &req)
{
    Writer w;
    w.u8(static_cast<uint8_t>(req.op));
    switch (req.op) {
    case Op::set:
        check_key(req.key);
        check_value(req.key, req.value);
        w.str(req.key);
        w.str(req.value);
        break;
    case Op::get:
        check_key(req.key);
        w.str(req.key);
        w.u64(req.timeout_ms);
        break;
    case Op::add:
        check_key(req.key);
        w.str(req.key);
        w.u64(static_cast<uint64_t>(req.delta));
        break;
    case Op::wait: {
        if (req.keys.size() > kMaxWaitKeys)
            throw_error(DT_ERR_INVALID_ARGUMENT, "wait on ", req.keys.size(),
                        " store keys at once; the limit is ", kMaxWaitKeys);
        size_t total = 0;
        for (const auto &k : req.keys) {
            check_key(k);
            total += 4 + k.size();
        }
        if (total > kMaxFrameBytes - 64)
            throw_error(DT_ERR_INVALID_ARGUMENT, "wait on store keys totalling ", total,
                        " bytes; split the wait into smaller groups");
        w.u32(static_cast<uint32_t>(req.keys.size()));
        for (const auto &k : req.keys)
            w.str(k);
        w.u64(req.timeout_ms);
        break;
    }
    default:
        throw_error(DT_ERR_INTERNAL, "unknown store op ", static_cast<int>(req.op));
    }
    return w.finish();
}

Request decode_request(std::string_view body)
{
    Parser p(body);
    Request req;
    uint8_t op = p.u8("op");
    req.op = static_cast<Op>(op);
    switch (req.op) {
    case Op::set:
        req.key = p.str("key", kMaxKeyBytes);
        req.value = p.str("value", kMaxValueBytes);
        break;
    case Op::get:
        req.key = p.str("key", kMaxKeyBytes);
        req.timeout_ms = p.u64("timeout");
        break;
    case Op::add:
        req.key = p.str("key", kMaxKeyBytes);
        req.delta = static_cast<int64_t>(p.u64("delta"));
        break;
    case Op::wait: {
        uint32_t n = p.u32("key count");
        if (n > kMaxWaitKeys)
            throw_error(DT_ERR_PROTOCOL, "wait on ", n, " keys exceeds the limit of ",
                        kMaxWaitKeys);
        // No reserve(n): n is only trusted as far as the frame really holds n keys.
        for (uint32_t i = 0; i < n; ++i)
            req.keys.push_back(p.str("key", kMaxKeyBytes));
        req.timeout_ms = p.u64("timeout");
        break;
    }
    default:
        throw_error(DT_ERR_PROTOCOL, "unknown op code ", static_cast<int>(op));
    }
    p.end();
    if (req.op == Op::wait) {
        for (const auto &k : req.keys)
            if (k.empty())
                throw_error(DT_ERR_PROTOCOL, "empty key in a wait request");
    } else if (req.key.empty()) {
        throw_error(DT_ERR_PROTOCOL, "empty key in a ", op_name(req.op), " request");
    }
    return req;
}

std::string encode_reply(Op op, const Reply &reply)
{
    Writer w;
    w.u8(static_cast<uint8_t>(reply.status));
    if (reply.status == Status::error) {
        w.str(std::string_view(reply.message).substr(0, kMaxMessageBytes));
    } else if (reply.status == Status::ok) {
        if (op == Op::get)
            w.str(reply.value);
        else if (op == Op::add)
            w.u64(static_cast<uint64_t>(reply.number));
    } else if (op == Op::wait) {
        w.u32(static_cast<uint32_t>(reply.keys.size()));
        for (const auto &k : reply.keys)
            w.str(k);
    }
    return w.finish();
}

Reply decode_reply(Op op, std::string_view body)
{
    Parser p(body);
    Reply r;
    uint8_t status = p.u8("status");
    if (status > static_cast<uint8_t>(Status::error))
        throw_error(DT_ERR_PROTOCOL, "unknown reply status ", static_cast<int>(status));
    r.status = static_cast<Status>(status);
    if (r.status == Status::error) {
        r.message = p.str("error message", kMaxMessageBytes);
    } else if (r.status == Status::ok) {
        if (op == Op::get)
            r.value = p.str("value", kMaxValueBytes);
        else if (op == Op::add)
            r.number = static_cast<int64_t>(p.u64("counter"));
    } else if (op == Op::wait) {
        uint32_t n = p.u32("missing key count");
        if (n > kMaxWaitKeys)
            throw_error(DT_ERR_PROTOCOL, n, " missing keys exceeds the limit of ", kMaxWaitKeys);
        for (uint32_t i = 0; i < n; ++i)
            r.keys.push_back(p.str("missing key", kMaxKeyBytes));
    } else if (op != Op::get) {
        throw_error(DT_ERR_PROTOCOL, "a ", op_name(op), " reply cannot be a timeout");
    }
    p.end();
    return r;
}

FrameRead read_frame(int fd, std::string &body, const Deadline &header_deadline,
                     std::chrono::milliseconds body_timeout, int wake_fd)
{
    FrameRead out;
    unsigned char prefix[4];
    // The first byte may take as long as the caller allows; once a frame has started,
    // the rest of it must follow within body_timeout.
    out.io = read_full(fd, prefix, 1, header_deadline, wake_fd);
    if (!out.io.ok())
        return out;
    Deadline body_deadline = Deadline::earliest(header_deadline, Deadline::after(body_timeout));
    out.io = read_full(fd, prefix + 1, 3, body_deadline, wake_fd);
    if (!out.io.ok())
        return out;
    uint32_t len = (uint32_t{prefix[0]} << 24) | (uint32_t{prefix[1]} << 16) |
                   (uint32_t{prefix[2]} << 8) | uint32_t{prefix[3]};
    if (len == 0 || len > kMaxFrameBytes) {
        out.problem = cat("frame length ", len, " is outside [1, ", kMaxFrameBytes, "]");
        return out;
    }
    body.resize(len);
    out.io = read_full(fd, body.data(), len, body_deadline, wake_fd);
    return out;
}

} // namespace dt::bootstrap::proto
