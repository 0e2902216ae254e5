// SPDX-License-Identifier: Apache-2.0
#include "train/report.h"

#include "common/error.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace dt::models {
namespace {

constexpr const char *kColumns[] = {"epoch",          "main/loss",
                                    "validation/main/loss", "main/accuracy",
                                    "validation/main/accuracy", "elapsed_time",
                                    "images/sec"};

// Doubles as JSON numbers: 17 significant digits round-trip; NaN/inf are not JSON.
std::string number(double v)
{
    if (!std::isfinite(v))
        return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

// The epoch of a metrics line written by to_json, or -1.
long long epoch_of(const std::string &line)
{
    const std::string key = "\"epoch\": ";
    const auto pos = line.find(key);
    if (pos == std::string::npos)
        return -1;
    return std::strtoll(line.c_str() + pos + key.size(), nullptr, 10);
}

} // namespace

void ReportTable::print(const EpochReport &r)
{
    // Columns as wide as their titles plus two spaces, like PrintReport.
    if (!header_done_) {
        for (const char *c : kColumns)
            std::fprintf(out_, "%-*s", int(std::strlen(c)) + 2, c);
        std::fprintf(out_, "\n");
        header_done_ = true;
    }
    const double values[] = {r.loss,         r.val_loss,     r.accuracy,
                             r.val_accuracy, r.elapsed_time, r.images_per_sec};
    std::fprintf(out_, "%-*llu", int(std::strlen(kColumns[0])) + 2,
                 static_cast<unsigned long long>(r.epoch));
    for (size_t i = 0; i < std::size(values); ++i)
        std::fprintf(out_, "%-*.6g", int(std::strlen(kColumns[i + 1])) + 2, values[i]);
    std::fprintf(out_, "\n");
    std::fflush(out_);
}

std::string to_json(const EpochReport &r)
{
    std::ostringstream o;
    o << "{\"epoch\": " << r.epoch << ", \"iteration\": " << r.iteration
      << ", \"main/loss\": " << number(r.loss)
      << ", \"validation/main/loss\": " << number(r.val_loss)
      << ", \"main/accuracy\": " << number(r.accuracy)
      << ", \"validation/main/accuracy\": " << number(r.val_accuracy)
      << ", \"elapsed_time\": " << number(r.elapsed_time)
      << ", \"images/sec\": " << number(r.images_per_sec) << ", \"lr\": " << number(r.lr)
      << "}";
    return o.str();
}

MetricsLog::MetricsLog(const std::string &path, bool resume, uint64_t keep_epochs)
    : path_(path)
{
    std::vector<std::string> kept;
    if (resume) {
        std::ifstream in(path);
        for (std::string line; std::getline(in, line);) {
            const long long e = epoch_of(line);
            if (e >= 1 && static_cast<uint64_t>(e) <= keep_epochs)
                kept.push_back(line);
        }
    }
    out_.open(path, std::ios::trunc);
    if (!out_)
        throw_input_error("cannot write the metrics file ", path, ": ", std::strerror(errno));
    for (const auto &line : kept)
        out_ << line << '\n';
    out_.flush();
}

void MetricsLog::write(const EpochReport &r)
{
    if (!out_.is_open())
        return;
    out_ << to_json(r) << '\n';
    out_.flush();
    if (!out_)
        throw std::runtime_error(cat("cannot write the metrics file ", path_));
}

} // namespace dt::models
