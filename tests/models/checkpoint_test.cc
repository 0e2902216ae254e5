// SPDX-License-Identifier: Apache-2.0
// Checkpoints: round trip, atomic replacement, and refusal of damaged files.
#include "common/error.h"
#include "train/checkpoint.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

namespace dt::models {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        dir_ = (fs::temp_directory_path() /
                ("dt-ckpt-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                   .string();
        fs::remove_all(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    CheckpointState sample()
    {
        CheckpointState st;
        const std::vector<float> w = {1.5f, -2.0f, 3.25f};
        st.put<float>("model/w", w);
        st.put_u64("train/step", 42);
        st.put_f64("train/loss", 0.125);
        st.put_string("model", "mlp");
        return st;
    }
    std::vector<uint8_t> file_bytes()
    {
        std::ifstream in(checkpoint_path(dir_), std::ios::binary);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
    void write_bytes(const std::vector<uint8_t> &b)
    {
        std::ofstream(checkpoint_path(dir_), std::ios::binary | std::ios::trunc)
            .write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
    }
    std::string refusal()
    {
        CheckpointState st;
        try {
            read_checkpoint(dir_, st);
        } catch (const InputError &e) {
            return e.what();
        }
        return "";
    }
    std::string dir_;
};

TEST_F(CheckpointTest, RoundTrip)
{
    write_checkpoint(dir_, sample());
    CheckpointState st;
    ASSERT_TRUE(read_checkpoint(dir_, st));
    EXPECT_EQ(st.get_u64("train/step"), 42u);
    EXPECT_EQ(st.get_f64("train/loss"), 0.125);
    EXPECT_EQ(st.get_string("model"), "mlp");
    std::vector<float> w(3);
    st.get_into("model/w", w.data(), 12);
    EXPECT_EQ(w[2], 3.25f);
    EXPECT_THROW(st.get_into("model/w", w.data(), 8), InputError); // another shape
    EXPECT_THROW(st.bytes("missing"), InputError);
    EXPECT_FALSE(fs::exists(checkpoint_path(dir_) + ".tmp"));
}

TEST_F(CheckpointTest, NoCheckpointIsNotAnError)
{
    CheckpointState st;
    EXPECT_FALSE(read_checkpoint(dir_, st));
}

// Only a missing file means "no checkpoint yet": anything in its place that cannot be
// read as one is refused, naming the path and why, so a --resume run never starts over
// and overwrites it.
TEST_F(CheckpointTest, UnreadableCheckpointIsRefusedNotTakenForNone)
{
    const std::string path = checkpoint_path(dir_);
    auto expect_refused = [&](const char *what, const char *why) {
        CheckpointState st;
        bool found = false;
        std::string e;
        try {
            found = read_checkpoint(dir_, st);
        } catch (const InputError &err) {
            e = err.what();
        }
        EXPECT_FALSE(found) << what;
        EXPECT_NE(e.find(path), std::string::npos) << what << ": " << e;
        EXPECT_NE(e.find(why), std::string::npos) << what << ": " << e;
        fs::remove_all(dir_);
    };
    fs::create_directories(path); // a folder in its place (read() gives EISDIR)
    expect_refused("folder", "is a folder");
    fs::create_directories(dir_);
    fs::create_symlink("checkpoint.dtck", path); // open() gives ELOOP
    expect_refused("symbolic link loop", std::strerror(ELOOP));
    fs::create_directories(dir_);
    fs::create_symlink(dir_ + "/elsewhere/checkpoint.dtck", path); // ENOENT, but it is there
    expect_refused("dangling symbolic link", "does not exist");
    fs::create_directories(dir_);
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0); // must not block the open either
    expect_refused("FIFO", "not a regular file");
    // Unreadable for its permissions: root reads it anyway.
    if (::geteuid() != 0) {
        write_checkpoint(dir_, sample());
        fs::permissions(path, fs::perms::none);
        expect_refused("mode 000", std::strerror(EACCES));
    }
}

TEST_F(CheckpointTest, FolderCheckCreatesItOrRefusesWhereNothingCanBeWritten)
{
    const std::string nested = dir_ + "/a/b";
    EXPECT_NO_THROW(check_checkpoint_folder(nested));
    EXPECT_TRUE(fs::is_directory(nested));
    // A regular file on the way: the folder cannot be created.
    std::ofstream(dir_ + "/file") << "x";
    try {
        check_checkpoint_folder(dir_ + "/file/sub");
        ADD_FAILURE() << "a path under a regular file was accepted";
    } catch (const InputError &e) {
        EXPECT_NE(std::string(e.what()).find("cannot create the folder"), std::string::npos)
            << e.what();
    }
    // A folder this user may not write to (root writes anyway; the trainer's test runs
    // this case as nobody).
    if (::geteuid() != 0) {
        fs::permissions(nested, fs::perms::owner_read | fs::perms::owner_exec);
        try {
            check_checkpoint_folder(nested);
            ADD_FAILURE() << "a read-only folder was accepted";
        } catch (const InputError &e) {
            EXPECT_NE(std::string(e.what()).find(std::strerror(EACCES)), std::string::npos)
                << e.what();
        }
        fs::permissions(nested, fs::perms::owner_all);
    }
}

TEST_F(CheckpointTest, ReplacesThePreviousOneAndIgnoresAStaleTemporary)
{
    write_checkpoint(dir_, sample());
    // A crash while writing the next one leaves a torn temporary file beside it.
    std::ofstream(checkpoint_path(dir_) + ".tmp") << "torn";
    CheckpointState st;
    ASSERT_TRUE(read_checkpoint(dir_, st));
    EXPECT_EQ(st.get_u64("train/step"), 42u);
    CheckpointState next = sample();
    next.put_u64("train/step", 43);
    write_checkpoint(dir_, next);
    ASSERT_TRUE(read_checkpoint(dir_, st));
    EXPECT_EQ(st.get_u64("train/step"), 43u);
}

TEST_F(CheckpointTest, CorruptByteIsRefused)
{
    write_checkpoint(dir_, sample());
    auto b = file_bytes();
    b[b.size() / 2] ^= 0x40;
    write_bytes(b);
    const std::string e = refusal();
    EXPECT_NE(e.find("corrupt"), std::string::npos) << e;
    EXPECT_NE(e.find(checkpoint_path(dir_)), std::string::npos) << e;
}

TEST_F(CheckpointTest, TruncatedFileIsRefused)
{
    write_checkpoint(dir_, sample());
    auto b = file_bytes();
    for (size_t keep : {size_t(0), size_t(5), size_t(30), b.size() - 1}) {
        write_bytes(std::vector<uint8_t>(b.begin(), b.begin() + long(keep)));
        const std::string e = refusal();
        EXPECT_NE(e.find("truncated"), std::string::npos) << keep << ": " << e;
    }
}

TEST_F(CheckpointTest, WrongMagicIsRefused)
{
    fs::create_directories(dir_);
    write_bytes(std::vector<uint8_t>(64, 'x'));
    EXPECT_NE(refusal().find("not a disttrain checkpoint"), std::string::npos);
}

} // namespace
} // namespace dt::models
