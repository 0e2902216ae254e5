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

// v in fewer than `room` characters where 6 down to 3 significant digits allow, else
// with 6 as wide as it needs.
std::string fit_number(double v, int room)
{
    char buf[64];
    for (int digits = 6; digits >= 3; --digits)
        if (std::snprintf(buf, sizeof buf, "%.*g", digits, v) < room)
            return buf;
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
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
    // Each cell ends where its column ends, if it leaves a space there: a value too wide
    // for its column loses digits first (6 significant down to 3), then pushes the cells
    // after it right, which take the room back from their padding where they can.
    std::string line;
    size_t column_end = 0;
    auto cell = [&](const char *title, const std::string &text) {
        column_end += std::strlen(title) + 2;
        line += text;
        line.append(line.size() < column_end ? column_end - line.size() : 1, ' ');
    };
    cell(kColumns[0], std::to_string(r.epoch));
    for (size_t i = 0; i < std::size(values); ++i)
        cell(kColumns[i + 1],
             fit_number(values[i], int(column_end + std::strlen(kColumns[i + 1]) + 2) -
                                       int(line.size())));
    std::fprintf(out_, "%s\n", line.c_str());
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
