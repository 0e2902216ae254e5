// SPDX-License-Identifier: Apache-2.0
#include "data/dataset.h"

#include "common/error.h"
#include "common/random.h"
#include "data/idx.h"

#include <algorithm>
#include <filesystem>

namespace dt::models {
namespace {

// Fashion-MNIST training set pixel statistics (on the [0, 1] scale).
constexpr float kMean = 0.2860f;
constexpr float kStd = 0.3530f;

// The .gz name if it exists, else the uncompressed one; the .gz name when neither does,
// so the error message names the file the Debian package installs.
std::string find_file(const std::string &dir, const std::string &stem)
{
    namespace fs = std::filesystem;
    const fs::path gz = fs::path(dir) / (stem + ".gz");
    const fs::path plain = fs::path(dir) / stem;
    if (!fs::exists(gz) && fs::exists(plain))
        return plain.string();
    return gz.string();
}

} // namespace

void Dataset::gather(std::span<const uint32_t> indices, float *images_out,
                     int32_t *labels_out) const
{
    const size_t n = sample_size();
    // One multiply-add per pixel: x / 255 / std - mean / std.
    const float scale = 1.0f / (255.0f * stddev), offset = -mean / stddev;
    for (size_t i = 0; i < indices.size(); ++i) {
        const uint8_t *src = pixels.data() + size_t(indices[i]) * n;
        float *dst = images_out + i * n;
        for (size_t j = 0; j < n; ++j)
            dst[j] = float(src[j]) * scale + offset;
        labels_out[i] = labels[indices[i]];
    }
}

Dataset load_fashion_mnist(const std::string &dir, Split split, size_t limit)
{
    const std::string prefix = split == Split::train ? "train" : "t10k";
    const std::string image_path = find_file(dir, prefix + "-images-idx3-ubyte");
    const std::string label_path = find_file(dir, prefix + "-labels-idx1-ubyte");
    IdxArray images = read_idx(image_path, limit);
    const IdxArray labels = read_idx(label_path, limit);
    if (images.dims.size() != 3)
        throw_input_error(image_path, ": expected 3 dimensions (N, 28, 28), found ",
                          images.dims.size());
    if (labels.dims.size() != 1)
        throw_input_error(label_path, ": expected 1 dimension (N), found ",
                          labels.dims.size());
    if (images.dims[0] != labels.dims[0])
        throw_input_error(image_path, " holds ", images.dims[0], " images but ", label_path,
                          " holds ", labels.dims[0], " labels");
    if (images.dims[0] == 0)
        throw_input_error(image_path, " holds no images; the ",
                          split == Split::train ? "training" : "test (validation)",
                          " set needs at least one");
    constexpr uint32_t kMaxSide = 1 << 14;
    if (images.dims[1] == 0 || images.dims[2] == 0 || images.dims[1] > kMaxSide ||
        images.dims[2] > kMaxSide)
        throw_input_error(image_path, ": images of ", images.dims[1], "x", images.dims[2],
                          " pixels; each side must be 1 to ", kMaxSide);

    Dataset out;
    out.height = static_cast<int>(images.dims[1]);
    out.width = static_cast<int>(images.dims[2]);
    out.pixels = std::move(images.data);
    out.images_file = image_path;
    out.mean = kMean;
    out.stddev = kStd;
    out.labels.assign(labels.data.begin(), labels.data.end());
    for (int32_t l : out.labels)
        if (l < 0 || l >= out.classes)
            throw_input_error(label_path, ": label ", l, " is outside 0..", out.classes - 1);
    return out;
}

void check_same_image_shape(const Dataset &train, const Dataset &test)
{
    if (test.channels != train.channels || test.height != train.height ||
        test.width != train.width)
        throw_input_error(test.images_file, " holds ", test.channels, "x", test.height, "x",
                          test.width, " images but ", train.images_file, " holds ",
                          train.channels, "x", train.height, "x", train.width,
                          " ones; the test set must have the training set's image shape");
}

Dataset synthetic_dataset(size_t n, int channels, int height, int width, int classes,
                          uint64_t seed)
{
    Dataset out;
    out.channels = channels;
    out.height = height;
    out.width = width;
    out.classes = classes;
    Random rng(seed);
    out.pixels.resize(n * out.sample_size());
    for (uint8_t &p : out.pixels)
        p = static_cast<uint8_t>(rng.next() >> 56);
    out.mean = 0.5f;
    out.stddev = 0.29f; // of a uniform distribution on [0, 1]
    out.labels.resize(n);
    for (int32_t &l : out.labels)
        l = static_cast<int32_t>(rng.below(uint64_t(classes)));
    return out;
}

} // namespace dt::models
