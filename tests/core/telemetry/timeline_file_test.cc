// SPDX-License-Identifier: Apache-2.0
// The timeline's file: which file a process writes (its own, never another process's),
// and that it stays a valid JSON array when a write fails.
#include "telemetry/timeline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <vector>
#include <unistd.h>

namespace {

using dt::Timeline;

std::string read_file(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The events of a trace as the timeline writes it: "[", then the events one a line with
// a line "," between two, then "]". Fails the test on anything else (a cut event, no "]").
std::vector<std::string> events_of(const std::string &text)
{
    std::vector<std::string> events;
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "[");
    bool comma = false, closed = false;
    while (std::getline(in, line)) {
        EXPECT_FALSE(closed) << "text after the closing bracket: " << line;
        if (line == "]") {
            closed = true;
        } else if (line == ",") {
            EXPECT_FALSE(comma || events.empty()) << "a comma without an event before it";
            comma = true;
        } else {
            EXPECT_TRUE(events.empty() || comma) << "no comma before " << line;
            EXPECT_TRUE(line.front() == '{' && line.back() == '}') << "cut event: " << line;
            events.push_back(line);
            comma = false;
        }
    }
    EXPECT_TRUE(closed && !comma) << "not closed after an event:\n" << text;
    EXPECT_EQ(text.back(), ']') << "the file does not end with the bracket:\n" << text;
    return events;
}

size_t count(const std::string &text, const std::string &what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

class TimelineFile : public testing::Test {
protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/timeline_file_test.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override
    {
        unsetenv("DISTTRAIN_TIMELINE");
        std::string rm = "rm -rf '" + dir_ + "'";
        EXPECT_EQ(std::system(rm.c_str()), 0);
    }
    std::string dir_;
};

// Every file starts with the process's name, its sort index and the engine row's name.
constexpr size_t kHeaderEvents = 3;

void mark(Timeline &timeline)
{
    timeline.marker("CYCLE", Timeline::Clock::now(), R"("ready":1)");
}

// A file size limit on this process, with SIGXFSZ ignored so that a write past it fails
// with EFBIG (or stops short) as on a full disk; both are restored at the end.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes)
    {
        getrlimit(RLIMIT_FSIZE, &saved_);
        old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limited = saved_;
        limited.rlim_cur = bytes;
        EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
    }
    ~FileSizeLimit()
    {
        setrlimit(RLIMIT_FSIZE, &saved_);
        std::signal(SIGXFSZ, old_handler_);
    }

private:
    rlimit saved_{};
    void (*old_handler_)(int);
};

TEST_F(TimelineFile, AFailedWriteLeavesTheEventsBeforeAsValidJsonWarnsOnceAndStops)
{
    const std::string path = dir_ + "/tl.json";
    auto timeline = Timeline::open(path, 0, "rank 0");
    ASSERT_NE(timeline, nullptr);
    mark(*timeline);
    const size_t size = read_file(path).size();
    mark(*timeline);
    const size_t per_event = read_file(path).size() - size;
    ASSERT_GT(per_event, 10u);

    testing::internal::CaptureStderr();
    {
        // Room for one more event and half of the next: that one is cut short.
        FileSizeLimit limit(size + 2 * per_event + per_event / 2);
        for (int i = 0; i < 10; ++i)
            mark(*timeline);
    }
    const std::string warnings = testing::internal::GetCapturedStderr();
    const std::string text = read_file(path);
    const auto events = events_of(text);
    EXPECT_EQ(events.size(), kHeaderEvents + 3u) << text; // and three markers
    EXPECT_EQ(count(warnings, "the timeline stopped after 6 events"), 1u) << warnings;
    EXPECT_NE(warnings.find("File too large"), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("the file holds those events as valid JSON"), std::string::npos)
        << warnings;

    // Room again: nothing more is written after a failure.
    testing::internal::CaptureStderr();
    mark(*timeline);
    timeline->phase("grad", "allreduce", Timeline::Clock::now(), Timeline::Clock::now());
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(read_file(path), text);
}

TEST_F(TimelineFile, ASecondWriterOfTheSameFileWritesNothingAndLeavesItWhole)
{
    const std::string path = dir_ + "/tl.json";
    auto first = Timeline::open(path, 0, "rank 0");
    ASSERT_NE(first, nullptr);
    mark(*first);
    const std::string before = read_file(path);

    testing::internal::CaptureStderr();
    auto second = Timeline::open(path, 1, "rank 1");
    const std::string warnings = testing::internal::GetCapturedStderr();
    EXPECT_EQ(second, nullptr);
    EXPECT_NE(warnings.find("is being written by another process or context"),
              std::string::npos) << warnings;
    EXPECT_EQ(read_file(path), before);

    mark(*first);
    EXPECT_EQ(events_of(read_file(path)).size(), kHeaderEvents + 2u);

    // Once the first is done with it, the file is free to be written anew.
    first.reset();
    EXPECT_NE(Timeline::open(path, 1, "rank 1"), nullptr);
    EXPECT_EQ(events_of(read_file(path)).size(), kHeaderEvents);
}

TEST_F(TimelineFile, RankNamesTheFileOfAProcessThatStartsWithOne)
{
    setenv("DISTTRAIN_TIMELINE", (dir_ + "/tl.{rank}.json").c_str(), 1);
    auto timeline = Timeline::open_from_env(2, false, 2);
    ASSERT_NE(timeline, nullptr);
    const std::string text = read_file(dir_ + "/tl.2.json");
    EXPECT_NE(text.find(R"("pid":2,"args":{"name":"rank 2"})"), std::string::npos) << text;
}

TEST_F(TimelineFile, AJoinerNamesItsFileByItsLaunchIdNotTheRankItReplaces)
{
    // The rank it replaces wrote tl.0.json, which must keep that rank's history.
    const std::string dead = dir_ + "/tl.0.json";
    std::ofstream(dead) << "[\n{\"name\":\"the dead rank's\"}\n]";
    setenv("DISTTRAIN_TIMELINE", (dir_ + "/tl.{rank}.json").c_str(), 1);
    auto joiner = Timeline::open_from_env(0, true, 3);
    ASSERT_NE(joiner, nullptr);
    EXPECT_EQ(read_file(dead), "[\n{\"name\":\"the dead rank's\"}\n]");
    const std::string text = read_file(dir_ + "/tl.3.json");
    EXPECT_NE(text.find(R"("pid":3,"args":{"name":"joined, launch id 3"})"), std::string::npos)
        << text;
}

TEST_F(TimelineFile, AJoinerWithoutALaunchIdWritesNothingAndSaysWhy)
{
    setenv("DISTTRAIN_TIMELINE", (dir_ + "/tl.{rank}.json").c_str(), 1);
    testing::internal::CaptureStderr();
    EXPECT_EQ(Timeline::open_from_env(1, true, -1), nullptr);
    const std::string warnings = testing::internal::GetCapturedStderr();
    EXPECT_NE(warnings.find("has no DISTTRAIN_LAUNCH_ID"), std::string::npos) << warnings;
    EXPECT_NE(access((dir_ + "/tl.1.json").c_str(), F_OK), 0);
}

TEST_F(TimelineFile, OneFileForTheJobIsTheStartingRankZerosAlone)
{
    const std::string path = dir_ + "/tl.json";
    setenv("DISTTRAIN_TIMELINE", path.c_str(), 1);
    EXPECT_EQ(Timeline::open_from_env(1, false, 1), nullptr);
    EXPECT_EQ(Timeline::open_from_env(0, true, 3), nullptr); // a joiner numbered 0 for now
    EXPECT_NE(access(path.c_str(), F_OK), 0);
    EXPECT_NE(Timeline::open_from_env(0, false, 0), nullptr);
    EXPECT_EQ(events_of(read_file(path)).size(), kHeaderEvents);
}

// The "ts" of the last event in text.
int64_t last_ts(const std::string &text)
{
    const size_t at = text.rfind(R"("ts":)");
    EXPECT_NE(at, std::string::npos) << text;
    return at == std::string::npos ? 0 : std::stoll(text.substr(at + 5));
}

int64_t epoch_micros()
{
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

TEST_F(TimelineFile, FilesOpenedAtDifferentTimesShareOneTimeAxis)
{
    // Two processes open their files 50 ms apart; a moment is the same "ts" in both,
    // and that is its time since the Unix epoch, so the files of a job merge.
    const int64_t before = epoch_micros();
    auto first = Timeline::open(dir_ + "/tl.0.json", 0, "rank 0");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto second = Timeline::open(dir_ + "/tl.1.json", 1, "rank 1");
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    const auto moment = Timeline::Clock::now();
    first->marker("CYCLE", moment);
    second->marker("CYCLE", moment);
    const int64_t after = epoch_micros();
    const int64_t ts0 = last_ts(read_file(dir_ + "/tl.0.json"));
    const int64_t ts1 = last_ts(read_file(dir_ + "/tl.1.json"));
    EXPECT_LE(std::abs(ts0 - ts1), 2000) << ts0 << " vs " << ts1;
    EXPECT_GE(ts0, before - 2000);
    EXPECT_LE(ts0, after + 2000);
    // The process rows sort by rank in the merged trace.
    EXPECT_NE(read_file(dir_ + "/tl.1.json").find(
                  R"({"name":"process_sort_index","ph":"M","pid":1,"args":{"sort_index":1}})"),
              std::string::npos);
}

} // namespace
