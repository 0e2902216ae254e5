// SPDX-License-Identifier: Apache-2.0
// parse_tf_config (tf_config.h): a small strict JSON reader (objects, arrays, strings,
// numbers, true/false/null; no extensions) and the checks on what TF_CONFIG must hold.
// The value comes from the environment, so every malformation is an error that names
// the variable and says what is wrong, never a crash or a silent default.
#include "bootstrap/tf_config.h"

#include "bootstrap/store.h"
#include "runtime/error.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <map>
#include <memory>

namespace dt::bootstrap {

namespace {

struct Json {
    enum Kind { null, boolean, number, string, array, object } kind = null;
    bool b = false;
    double num = 0;
    std::string str;
    std::vector<Json> items;
    std::map<std::string, Json> fields;
};

const char *kind_name(Json::Kind k)
{
    switch (k) {
    case Json::null: return "null";
    case Json::boolean: return "a boolean";
    case Json::number: return "a number";
    case Json::string: return "a string";
    case Json::array: return "a list";
    case Json::object: return "an object";
    }
    return "?";
}

class Reader {
public:
    Reader(const std::string &what, const std::string &text) : what_(what), s_(text) {}

    Json document()
    {
        Json v = value(0);
        skip_space();
        if (pos_ != s_.size())
            fail("unexpected text after the JSON value");
        return v;
    }

private:
    static constexpr int kMaxDepth = 32;
    const std::string &what_;
    const std::string &s_;
    size_t pos_ = 0;

    [[noreturn]] void fail(const std::string &why) const
    {
        throw_error(DT_ERR_INVALID_CONFIG, what_, " is not valid JSON: ", why, " at offset ",
                    pos_, "; expected e.g. {\"cluster\": {\"worker\": [\"host0:2222\", "
                    "\"host1:2222\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
    }

    void skip_space()
    {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }

    bool literal(const char *word)
    {
        size_t n = std::char_traits<char>::length(word);
        if (s_.compare(pos_, n, word) != 0)
            return false;
        pos_ += n;
        return true;
    }

    Json value(int depth)
    {
        if (depth > kMaxDepth)
            fail("nested too deeply");
        skip_space();
        if (pos_ >= s_.size())
            fail("the value ends early");
        Json v;
        char c = s_[pos_];
        if (c == '{') {
            v.kind = Json::object;
            ++pos_;
            skip_space();
            if (pos_ < s_.size() && s_[pos_] == '}') {
                ++pos_;
                return v;
            }
            for (;;) {
                skip_space();
                if (pos_ >= s_.size() || s_[pos_] != '"')
                    fail("expected a quoted key");
                std::string key = string();
                skip_space();
                if (pos_ >= s_.size() || s_[pos_] != ':')
                    fail("expected ':' after a key");
                ++pos_;
                if (v.fields.count(key))
                    fail("the key \"" + key + "\" appears twice");
                v.fields[key] = value(depth + 1);
                skip_space();
                if (pos_ < s_.size() && s_[pos_] == ',') {
                    ++pos_;
                    continue;
                }
                if (pos_ < s_.size() && s_[pos_] == '}') {
                    ++pos_;
                    return v;
                }
                fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            v.kind = Json::array;
            ++pos_;
            skip_space();
            if (pos_ < s_.size() && s_[pos_] == ']') {
                ++pos_;
                return v;
            }
            for (;;) {
                v.items.push_back(value(depth + 1));
                skip_space();
                if (pos_ < s_.size() && s_[pos_] == ',') {
                    ++pos_;
                    continue;
                }
                if (pos_ < s_.size() && s_[pos_] == ']') {
                    ++pos_;
                    return v;
                }
                fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            v.kind = Json::string;
            v.str = string();
            return v;
        }
        if (literal("true")) {
            v.kind = Json::boolean;
            v.b = true;
            return v;
        }
        if (literal("false")) {
            v.kind = Json::boolean;
            return v;
        }
        if (literal("null"))
            return v;
        if (c == '-' || (c >= '0' && c <= '9')) {
            v.kind = Json::number;
            v.num = number();
            return v;
        }
        fail(std::string("unexpected character '") + c + "'");
    }

    double number()
    {
        size_t start = pos_;
        if (s_[pos_] == '-')
            ++pos_;
        auto digits = [&] {
            size_t from = pos_;
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9')
                ++pos_;
            return pos_ - from;
        };
        if (digits() == 0)
            fail("a number has no digits");
        if (pos_ < s_.size() && s_[pos_] == '.') {
            ++pos_;
            if (digits() == 0)
                fail("a number has no digits after '.'");
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            ++pos_;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-'))
                ++pos_;
            if (digits() == 0)
                fail("a number has no exponent digits");
        }
        return std::strtod(s_.substr(start, pos_ - start).c_str(), nullptr);
    }

    // At the opening quote; returns the decoded text (\uXXXX kept to ASCII or UTF-8).
    std::string string()
    {
        ++pos_;
        std::string out;
        for (;;) {
            if (pos_ >= s_.size())
                fail("a string is not closed");
            unsigned char c = static_cast<unsigned char>(s_[pos_++]);
            if (c == '"')
                return out;
            if (c < 0x20)
                fail("a control character inside a string");
            if (c != '\\') {
                out += static_cast<char>(c);
                continue;
            }
            if (pos_ >= s_.size())
                fail("a string is not closed");
            char e = s_[pos_++];
            switch (e) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                if (pos_ + 4 > s_.size())
                    fail("a \\u escape is cut short");
                unsigned cp = 0;
                for (int i = 0; i < 4; ++i) {
                    char h = s_[pos_++];
                    cp <<= 4;
                    if (h >= '0' && h <= '9') cp |= unsigned(h - '0');
                    else if (h >= 'a' && h <= 'f') cp |= unsigned(h - 'a' + 10);
                    else if (h >= 'A' && h <= 'F') cp |= unsigned(h - 'A' + 10);
                    else fail("a \\u escape has a non-hex digit");
                }
                if (cp < 0x80) {
                    out += static_cast<char>(cp);
                } else if (cp < 0x800) {
                    out += static_cast<char>(0xC0 | (cp >> 6));
                    out += static_cast<char>(0x80 | (cp & 0x3F));
                } else {
                    out += static_cast<char>(0xE0 | (cp >> 12));
                    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
                    out += static_cast<char>(0x80 | (cp & 0x3F));
                }
                break;
            }
            default: fail(std::string("an unknown escape '\\") + e + "'");
            }
        }
    }
};

const Json *field(const Json &obj, const char *key)
{
    auto it = obj.fields.find(key);
    return it == obj.fields.end() ? nullptr : &it->second;
}

// The list cluster.<role>, or an empty list when absent.
std::vector<std::string> members(const std::string &what, const Json &cluster, const char *role)
{
    std::vector<std::string> out;
    const Json *list = field(cluster, role);
    if (list == nullptr)
        return out;
    if (list->kind != Json::array)
        throw_error(DT_ERR_INVALID_CONFIG, what, ": cluster.", role, " is ",
                    kind_name(list->kind), "; expected a list of \"host:port\" strings");
    for (size_t i = 0; i < list->items.size(); ++i) {
        const Json &m = list->items[i];
        if (m.kind != Json::string)
            throw_error(DT_ERR_INVALID_CONFIG, what, ": cluster.", role, "[", i, "] is ",
                        kind_name(m.kind), "; expected a \"host:port\" string");
        // Checks the form (host and port present, port in range); names the member.
        parse_host_port(cat(what, " cluster.", role, "[", i, "]"), m.str);
        out.push_back(m.str);
    }
    return out;
}

std::string host_of(const std::string &member)
{
    return parse_host_port("TF_CONFIG member", member).host;
}

} // namespace

TfConfig parse_tf_config(const std::string &what, const std::string &value)
{
    Json doc = Reader(what, value).document();
    if (doc.kind != Json::object)
        throw_error(DT_ERR_INVALID_CONFIG, what, " is ", kind_name(doc.kind),
                    "; expected an object with \"cluster\" and \"task\"");
    const Json *cluster = field(doc, "cluster");
    if (cluster == nullptr || cluster->kind != Json::object)
        throw_error(DT_ERR_INVALID_CONFIG, what, " has no \"cluster\" object; expected "
                    "{\"cluster\": {\"worker\": [\"host:port\", ...]}, ...}");
    std::vector<std::string> chief = members(what, *cluster, "chief");
    std::vector<std::string> workers = members(what, *cluster, "worker");
    if (chief.size() > 1)
        throw_error(DT_ERR_INVALID_CONFIG, what, ": cluster.chief lists ", chief.size(),
                    " members; a cluster has at most one chief");
    if (workers.empty() && chief.empty())
        throw_error(DT_ERR_INVALID_CONFIG, what, ": cluster has no \"worker\" list (or it "
                    "is empty); expected \"worker\": [\"host:port\", ...]");

    const Json *task = field(doc, "task");
    if (task == nullptr || task->kind != Json::object)
        throw_error(DT_ERR_INVALID_CONFIG, what, " has no \"task\" object; expected "
                    "\"task\": {\"type\": \"worker\", \"index\": i}");
    const Json *type = field(*task, "type");
    if (type == nullptr || type->kind != Json::string)
        throw_error(DT_ERR_INVALID_CONFIG, what, ": task.type is missing or not a string; "
                    "expected \"worker\" or \"chief\"");
    const Json *index = field(*task, "index");
    int64_t i = 0;
    if (index != nullptr) {
        if (index->kind != Json::number || index->num != std::floor(index->num) ||
            index->num < 0 || index->num > 1e7)
            throw_error(DT_ERR_INVALID_CONFIG, what, ": task.index must be a non-negative "
                        "integer");
        i = static_cast<int64_t>(index->num);
    } else if (type->str != "chief") {
        throw_error(DT_ERR_INVALID_CONFIG, what, ": task.index is missing");
    }

    TfConfig out;
    out.members = chief;
    out.members.insert(out.members.end(), workers.begin(), workers.end());
    if (type->str == "chief") {
        if (chief.empty())
            throw_error(DT_ERR_INVALID_CONFIG, what, ": task.type is \"chief\" but the "
                        "cluster has no \"chief\" list");
        if (i != 0)
            throw_error(DT_ERR_INVALID_CONFIG, what, ": task.index is ", i,
                        " for the chief; the only chief is index 0");
        out.rank = 0;
    } else if (type->str == "worker") {
        if (i >= static_cast<int64_t>(workers.size()))
            throw_error(DT_ERR_INVALID_CONFIG, what, ": task.index is ", i,
                        " but cluster.worker lists ", workers.size(), " member",
                        workers.size() == 1 ? "" : "s", " (0..", workers.size() - 1, ")");
        out.rank = static_cast<int>(chief.size() + i);
    } else {
        throw_error(DT_ERR_INVALID_CONFIG, what, ": task.type is \"", type->str,
                    "\"; disttrain ranks are \"worker\" (or \"chief\", rank 0): parameter "
                    "servers and evaluators take no part in its collectives, so do not "
                    "start them as disttrain ranks");
    }
    const std::string host = host_of(out.members[out.rank]);
    out.local_size = 0;
    for (size_t m = 0; m < out.members.size(); ++m) {
        if (host_of(out.members[m]) != host)
            continue;
        if (static_cast<int>(m) < out.rank)
            ++out.local_rank;
        ++out.local_size;
    }
    return out;
}

} // namespace dt::bootstrap
