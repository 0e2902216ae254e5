// SPDX-License-Identifier: Apache-2.0
// IDX reading: plain and gzip files, and the errors for missing, malformed and
// truncated files.
#include "common/error.h"
#include "data/dataset.h"
#include "data/idx.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dt::models {
namespace {

namespace fs = std::filesystem;

// An IDX file of unsigned bytes whose element i is i * step (mod 256).
std::vector<uint8_t> idx_bytes(std::vector<uint32_t> dims, uint8_t type = 0x08, int step = 7)
{
    std::vector<uint8_t> out = {0, 0, type, uint8_t(dims.size())};
    size_t n = 1;
    for (uint32_t d : dims) {
        out.push_back(uint8_t(d >> 24));
        out.push_back(uint8_t(d >> 16));
        out.push_back(uint8_t(d >> 8));
        out.push_back(uint8_t(d));
        n *= d;
    }
    for (size_t i = 0; i < n; ++i)
        out.push_back(uint8_t(i * size_t(step)));
    return out;
}

class IdxTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() /
               ("dt-idx-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string write_plain(const std::string &name, const std::vector<uint8_t> &bytes)
    {
        const auto path = (dir_ / name).string();
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
        return path;
    }
    std::string write_gz(const std::string &name, const std::vector<uint8_t> &bytes)
    {
        const auto path = (dir_ / name).string();
        gzFile f = gzopen(path.c_str(), "wb");
        gzwrite(f, bytes.data(), unsigned(bytes.size()));
        gzclose(f);
        return path;
    }
    std::string error_of(const std::string &path)
    {
        try {
            read_idx(path);
        } catch (const InputError &e) {
            return e.what();
        }
        return "";
    }
    fs::path dir_;
};

TEST_F(IdxTest, ReadsPlainAndGzip)
{
    const auto bytes = idx_bytes({3, 2, 2});
    for (const auto &path : {write_plain("a", bytes), write_gz("b.gz", bytes)}) {
        const IdxArray a = read_idx(path);
        ASSERT_EQ(a.dims, (std::vector<uint32_t>{3, 2, 2}));
        ASSERT_EQ(a.data.size(), 12u);
        EXPECT_EQ(a.data[5], 35);
    }
}

TEST_F(IdxTest, LimitReadsThePrefix)
{
    const IdxArray a = read_idx(write_gz("c.gz", idx_bytes({10, 3})), 4);
    EXPECT_EQ(a.dims, (std::vector<uint32_t>{4, 3}));
    EXPECT_EQ(a.data.size(), 12u);
}

TEST_F(IdxTest, MissingFileNamesPathAndPackage)
{
    const auto path = (dir_ / "nope.gz").string();
    const std::string e = error_of(path);
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("dataset-fashion-mnist"), std::string::npos) << e;
}

TEST_F(IdxTest, WrongMagicIsRefused)
{
    auto bytes = idx_bytes({2, 2});
    bytes[0] = 0x1f;
    const std::string e = error_of(write_plain("bad", bytes));
    EXPECT_NE(e.find("not an IDX file"), std::string::npos) << e;
}

TEST_F(IdxTest, UnsupportedTypeIsRefused)
{
    const std::string e = error_of(write_plain("f32", idx_bytes({2}, 0x0d)));
    EXPECT_NE(e.find("not supported"), std::string::npos) << e;
}

TEST_F(IdxTest, TruncatedFilesAreRefused)
{
    auto bytes = idx_bytes({10, 10});
    bytes.resize(bytes.size() - 30);
    EXPECT_NE(error_of(write_plain("short", bytes)).find("truncated"), std::string::npos);
    EXPECT_NE(error_of(write_gz("short.gz", bytes)).find("truncated"), std::string::npos);
    // A gzip stream cut in the middle.
    const auto gz = write_gz("cut.gz", idx_bytes({100, 100}));
    fs::resize_file(gz, fs::file_size(gz) / 2);
    EXPECT_NE(error_of(gz).find("truncated"), std::string::npos) << error_of(gz);
}

// A gzip file whose checksum (or length) at the end is wrong decompresses fine up to
// there: the message says so, not that the header being read was damaged.
TEST_F(IdxTest, WrongGzipChecksumIsToldAsSuch)
{
    for (const auto &[back, said] : {std::pair{8, "checksum recorded at its end (incorrect data "
                                                   "check)"},
                                     std::pair{4, "length recorded at its end (incorrect "
                                                  "length check)"}}) {
        const auto gz = write_gz("crc" + std::to_string(back) + ".gz", idx_bytes({600}));
        std::fstream f(gz, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(-back, std::ios::end);
        const char c = char(f.get() ^ 0xff);
        f.seekp(-back, std::ios::end);
        f.put(c);
        f.close();
        const std::string e = error_of(gz);
        EXPECT_EQ(e.rfind(gz + ": damaged gzip file: the data it decompresses to does not "
                               "match the ", 0), 0u) << e;
        EXPECT_NE(e.find(said), std::string::npos) << e;
        EXPECT_EQ(e.find("magic"), std::string::npos) << e;
        EXPECT_EQ(e.find(gz, 1), std::string::npos) << e; // the path once
    }
}

// Damage inside the compressed data is located in the file.
TEST_F(IdxTest, DamagedGzipStreamSaysWhereInTheFile)
{
    std::vector<uint8_t> bytes = idx_bytes({200, 200}, 0x08, 13);
    const auto gz = write_gz("bad.gz", bytes);
    std::fstream f(gz, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    for (int i = 0; i < 50; ++i)
        f.put(char(0x5a ^ i));
    f.close();
    const std::string e = error_of(gz);
    EXPECT_EQ(e.rfind(gz + ": damaged gzip stream at byte ", 0), 0u) << e;
    EXPECT_NE(e.find(" of the file ("), std::string::npos) << e;
    EXPECT_EQ(e.find(gz, 1), std::string::npos) << e;
}

TEST_F(IdxTest, DirectoryInPlaceOfTheFileIsToldAsSuch)
{
    const auto path = (dir_ / "train-labels-idx1-ubyte.gz").string();
    fs::create_directory(path);
    const std::string e = error_of(path);
    EXPECT_EQ(e.rfind(path + " is a directory, not an IDX file", 0), 0u) << e;
    EXPECT_EQ(e.find("gzip stream"), std::string::npos) << e;
}

// An IDX header with no data after it.
std::vector<uint8_t> idx_header(std::vector<uint32_t> dims)
{
    std::vector<uint8_t> out = {0, 0, 0x08, uint8_t(dims.size())};
    for (uint32_t d : dims)
        for (int shift : {24, 16, 8, 0})
            out.push_back(uint8_t(d >> shift));
    return out;
}

TEST_F(IdxTest, HeaderDeclaringMoreThanTheFileHoldsIsRefusedBeforeAllocating)
{
    // 2 TB declared, 1 KB there: refused as truncated (not std::bad_alloc), plain or gzip,
    // with a limit too.
    auto bytes = idx_header({500, 65535, 65535});
    bytes.resize(bytes.size() + 1024, 7);
    for (const auto &path : {write_plain("huge", bytes), write_gz("huge.gz", bytes)})
        for (size_t limit : {size_t(0), size_t(400)}) {
            std::string e;
            try {
                read_idx(path, limit);
            } catch (const InputError &err) {
                e = err.what();
            }
            EXPECT_NE(e.find(path), std::string::npos) << e;
            EXPECT_NE(e.find("truncated"), std::string::npos) << e;
            EXPECT_NE(e.find("500 x 65535 x 65535"), std::string::npos) << e;
        }
}

TEST_F(IdxTest, DimensionsWhoseProductOverflowsAreRefused)
{
    // 4 x 2^31 x 2^31 = 2^64 wraps to 0 in size_t.
    auto bytes = idx_header({4, 0x80000000u, 0x80000000u});
    bytes.resize(bytes.size() + 64, 1);
    const auto path = write_plain("wraps", bytes);
    const std::string e = error_of(path);
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("4 x 2147483648 x 2147483648"), std::string::npos) << e;
}

TEST_F(IdxTest, EmptySplitIsRefused)
{
    write_plain("t10k-images-idx3-ubyte", idx_header({0, 28, 28}));
    write_plain("t10k-labels-idx1-ubyte", idx_header({0}));
    try {
        load_fashion_mnist(dir_.string(), Split::test);
        ADD_FAILURE() << "an empty test set was accepted";
    } catch (const InputError &e) {
        EXPECT_NE(std::string(e.what()).find("holds no images"), std::string::npos) << e.what();
    }
}

TEST_F(IdxTest, TestImagesOfAnotherShapeAreRefused)
{
    write_gz("train-images-idx3-ubyte.gz", idx_bytes({4, 28, 28}));
    write_gz("train-labels-idx1-ubyte.gz", idx_bytes({4}, 0x08, 1));
    write_plain("t10k-images-idx3-ubyte", idx_bytes({3, 14, 14}));
    write_plain("t10k-labels-idx1-ubyte", idx_bytes({3}, 0x08, 1));
    const Dataset train = load_fashion_mnist(dir_.string(), Split::train);
    const Dataset test = load_fashion_mnist(dir_.string(), Split::test);
    EXPECT_NO_THROW(check_same_image_shape(train, train));
    try {
        check_same_image_shape(train, test);
        ADD_FAILURE() << "14x14 test images were accepted for 28x28 training images";
    } catch (const InputError &e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(train.images_file), std::string::npos) << m;
        EXPECT_NE(m.find(test.images_file), std::string::npos) << m;
        EXPECT_NE(m.find("1x14x14"), std::string::npos) << m;
        EXPECT_NE(m.find("1x28x28"), std::string::npos) << m;
    }
}

TEST_F(IdxTest, FashionMnistFromAFolder)
{
    write_gz("train-images-idx3-ubyte.gz", idx_bytes({5, 28, 28}));
    write_gz("train-labels-idx1-ubyte.gz", idx_bytes({5}, 0x08, 2)); // 0 2 4 6 8
    const Dataset d = load_fashion_mnist(dir_.string(), Split::train);
    EXPECT_EQ(d.size(), 5u);
    EXPECT_EQ(d.sample_size(), 784u);
    std::vector<float> x(2 * 784);
    std::vector<int32_t> y(2);
    const std::vector<uint32_t> idx = {4, 0};
    d.gather(idx, x.data(), y.data());
    EXPECT_EQ(y[0], 8);
    EXPECT_EQ(y[1], 0);
    EXPECT_FLOAT_EQ(x[784], (0.0f - d.mean) / d.stddev);
}

TEST_F(IdxTest, LabelOutOfRangeIsRefused)
{
    write_gz("t10k-images-idx3-ubyte.gz", idx_bytes({3, 28, 28}));
    write_gz("t10k-labels-idx1-ubyte.gz", idx_bytes({3})); // labels 0, 7, 14
    EXPECT_THROW(load_fashion_mnist(dir_.string(), Split::test), InputError);
}

} // namespace
} // namespace dt::models
