/* SPDX-License-Identifier: Apache-2.0 */
// An image classification data set held in memory as 8-bit NCHW pixels and int32
// labels (a quarter of the memory of floats: every rank holds the whole training set,
// since each epoch's shuffle hands it different samples); batches are converted to
// standardised float32 as they are gathered. Fashion-MNIST read from IDX files, or
// synthetic data for benchmarks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dt::models {

struct Dataset {
    int channels = 1;
    int height = 28;
    int width = 28;
    int classes = 10;
    std::vector<uint8_t> pixels; // size() * sample_size() bytes, NCHW
    std::vector<int32_t> labels;
    float mean = 0.0f, stddev = 1.0f; // of pixel / 255; gather() standardises with them
    std::string images_file = "synthetic"; // where the images came from, for messages

    size_t size() const { return labels.size(); }
    size_t sample_size() const { return size_t(channels) * height * width; }

    // Writes the samples at `indices` as a batch: (pixel / 255 - mean) / stddev, NCHW,
    // and their labels.
    void gather(std::span<const uint32_t> indices, float *images_out,
                int32_t *labels_out) const;
};

enum class Split { train, test };

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char *kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Loads Fashion-MNIST's train or test split from dir (files named like
// train-images-idx3-ubyte.gz; the uncompressed names work too). limit > 0 keeps only the
// first `limit` samples. Batches are standardised with the training set's pixel mean and
// standard deviation. Throws InputError for missing or malformed files, and for a split
// with no samples.
Dataset load_fashion_mnist(const std::string &dir, Split split, size_t limit = 0);

// Throws InputError, naming both image files and shapes, when the test set's images are
// not the shape of the training set's (the model is built for the latter).
void check_same_image_shape(const Dataset &train, const Dataset &test);

// n random samples of the given shape with random labels, for throughput benchmarks.
Dataset synthetic_dataset(size_t n, int channels, int height, int width, int classes,
                          uint64_t seed);

} // namespace dt::models
