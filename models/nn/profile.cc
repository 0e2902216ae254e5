// SPDX-License-Identifier: Apache-2.0
#include "nn/profile.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <vector>

namespace dt::models {
namespace {

struct Times {
    double forward = 0, backward = 0;
    long calls = 0, backward_calls = 0;
};

// "layer1.0.a.conv" -> "conv", "layer2.1.add" -> "add", "fc" -> "fc".
std::string kind_of(const std::string &name)
{
    const auto dot = name.rfind('.');
    std::string k = dot == std::string::npos ? name : name.substr(dot + 1);
    k.erase(std::remove_if(k.begin(), k.end(), [](unsigned char c) { return std::isdigit(c); }),
            k.end());
    return k.empty() ? name : k;
}

class Table {
public:
    ~Table()
    {
        if (layers_.empty())
            return;
        std::map<std::string, Times> kinds;
        double total = 0;
        for (const auto &[name, t] : layers_) {
            auto &k = kinds[kind_of(name)];
            k.forward += t.forward;
            k.backward += t.backward;
            k.calls += t.calls;
            total += t.forward + t.backward;
        }
        std::fprintf(stderr,
                     "layer profile (DISTTRAIN_PROFILE_LAYERS): %.3f CPU s in layers over %ld "
                     "steps (the first left out)\n",
                     total, layers_.begin()->second.calls - 1);
        std::fprintf(stderr, "  %-28s %10s %10s %7s\n", "kind", "forward s", "backward s",
                     "share");
        print(kinds, total, kinds.size());
        std::fprintf(stderr, "  %-28s %10s %10s %7s\n", "slowest layers", "forward s",
                     "backward s", "share");
        print(layers_, total, 15);
    }

    std::map<std::string, Times> layers_;

private:
    static void print(const std::map<std::string, Times> &m, double total, size_t top)
    {
        std::vector<std::pair<std::string, Times>> rows(m.begin(), m.end());
        std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
            return a.second.forward + a.second.backward > b.second.forward + b.second.backward;
        });
        rows.resize(std::min(rows.size(), top));
        for (const auto &[name, t] : rows)
            std::fprintf(stderr, "  %-28s %10.3f %10.3f %6.1f%%\n", name.c_str(), t.forward,
                         t.backward, 100.0 * (t.forward + t.backward) / std::max(total, 1e-12));
    }
};

Table &table()
{
    static Table t;
    return t;
}

} // namespace

bool LayerProfile::enabled()
{
    static const bool on = [] {
        const char *v = std::getenv("DISTTRAIN_PROFILE_LAYERS");
        return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
    }();
    return on;
}

double LayerProfile::now()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void LayerProfile::record(const std::string &layer, bool backward, double seconds)
{
    Times &t = table().layers_[layer];
    // A layer's first call (primitive creation, first touch of its buffers) is warm-up,
    // not what a step costs.
    long &calls = backward ? t.backward_calls : t.calls;
    if (calls++ > 0)
        (backward ? t.backward : t.forward) += seconds;
}

} // namespace dt::models
