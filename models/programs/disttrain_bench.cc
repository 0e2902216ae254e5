// SPDX-License-Identifier: Apache-2.0
// disttrain-bench: synthetic data-parallel training benchmark, in the manner of
// tf_cnn_benchmarks and Horovod's synthetic benchmark.
//
//   disttrainrun -np 2 disttrain-bench --model resnet50 --batch-size 32 --num-iters 10
//
// Prints images/sec per worker for every timed iteration, then "per worker: mean +- std"
// and the total over all workers. Never asserts a time.
#include "common/error.h"
#include "data/dataset.h"
#include "nn/compute.h"
#include "nn/profile.h"
#include "train/cli_validators.h"
#include "train/distributed.h"
#include "train/model_state.h"
#include "train/step.h"
#include "zoo/zoo.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include <unistd.h>

namespace dt::models {
namespace {

struct BenchOptions {
    std::string model = "resnet50";
    uint64_t batch_size = 32;
    int num_warmup = 2;
    int num_iters = 10;
    int threads = 0;
    bool bf16 = false;
    std::string optimizer = "momentum";
    uint64_t seed = 1;
    bool print_checksum = false;
};

// The one batch of input images, in float32, must fit in this machine's memory: a batch
// size that cannot would otherwise end in std::bad_alloc, naming no option. (The
// activations need several times more; this bounds what is certain to be needed.)
void check_batch_fits(uint64_t batch_size, const InputShape &in, const std::string &model)
{
    const uint64_t per_image =
        uint64_t(in.channels) * in.height * in.width * (sizeof(float) + sizeof(uint8_t));
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const uint64_t memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
    uint64_t bytes = 0;
    const bool wraps = __builtin_mul_overflow(batch_size, per_image, &bytes);
    if (memory != 0 && (wraps || bytes > memory))
        throw_input_error("--batch-size ", batch_size, " needs more memory for one batch of ",
                          model, " input images alone (", per_image, " bytes each) than this "
                          "machine has (", memory >> 20, " MiB); use a smaller --batch-size");
}

int bench(const BenchOptions &o)
{
    const InputShape in = default_input(o.model);
    check_batch_fits(o.batch_size, in, o.model);
    Compute compute(ComputeOptions{o.threads, o.bf16, ""});
    Distributed dist(compute);
    Model model = build_model(compute, o.model, in, o.seed);
    Optimizer optimizer(compute, OptimizerConfig{parse_optimizer(o.optimizer)},
                        model.parameters());
    SoftmaxCrossEntropy loss(compute);
    GradientSync sync(dist, compute);
    dist.broadcast(model_tensors(model), "init/model/");

    // One synthetic batch, reused: the benchmark measures compute and communication.
    const Dataset data = synthetic_dataset(o.batch_size, in.channels, in.height, in.width,
                                           in.classes, o.seed + uint64_t(dist.rank()));
    const auto n = int64_t(o.batch_size);
    Tensor x;
    Tensor y(compute, dt_tensor_desc_1d(DT_INT32, n));
    {
        std::vector<uint32_t> idx(o.batch_size);
        std::iota(idx.begin(), idx.end(), 0u);
        std::vector<float> images(o.batch_size * data.sample_size());
        std::vector<int32_t> labels(o.batch_size);
        data.gather(idx, images.data(), labels.data());
        load_input(compute, model, x, images.data(), n);
        y.copy_from_host(compute, labels.data());
    }
    if (dist.rank() == 0) {
        std::printf("model %s (%zu parameters), batch %llu per worker, %d worker(s) over %s, "
                    "%s, %s activations, %s layout\n",
                    o.model.c_str(), model.parameter_count(),
                    static_cast<unsigned long long>(o.batch_size), dist.size(),
                    dist.transport().c_str(), compute.describe().c_str(),
                    dt_dtype_name(model.activations), layout_name(model.layout));
        std::fflush(stdout);
    }
    std::vector<double> rates, cpu_rates;
    // int64_t: --num-warmup and --num-iters may each be up to INT_MAX.
    for (int64_t i = 0; i < int64_t(o.num_warmup) + o.num_iters; ++i) {
        // The timed steps start and end on an idle device (and bracket a GPU plugin's
        // profile, DISTTRAIN_CUDNN_PROFILE, to the steady state).
        if (i == o.num_warmup)
            compute.synchronize();
        const double cpu0 = LayerProfile::now();
        const auto t0 = std::chrono::steady_clock::now();
        const LossResult r = train_step(model, loss, sync, optimizer, x, y, 0.01);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                             .count();
        const double cpu = LayerProfile::now() - cpu0;
        if (i < o.num_warmup)
            continue;
        rates.push_back(double(o.batch_size) / s);
        cpu_rates.push_back(double(o.batch_size) / cpu);
        if (dist.rank() == 0) {
            std::printf("iter %lld: %.1f images/sec per worker (loss %.3f)\n",
                        static_cast<long long>(i - o.num_warmup + 1), rates.back(), r.loss);
            std::fflush(stdout);
        }
    }
    compute.synchronize();
    const double mean = std::accumulate(rates.begin(), rates.end(), 0.0) / double(rates.size());
    double var = 0;
    for (double r : rates)
        var += (r - mean) * (r - mean);
    const double stddev = rates.size() > 1 ? std::sqrt(var / double(rates.size() - 1)) : 0.0;
    // Each worker's mean and variance; the total is the sum of the workers' rates.
    // Images per CPU-second of the whole process (compute and engine threads): with one
    // thread it is the rate a quiet machine would give, so busy machines compare too.
    const double cpu_mean =
        std::accumulate(cpu_rates.begin(), cpu_rates.end(), 0.0) / double(cpu_rates.size());
    std::vector<double> sums = {mean, stddev * stddev, cpu_mean};
    dist.sum(sums, "bench/rates");
    if (dist.rank() == 0) {
        std::printf("images/sec per worker: %.1f +- %.1f\n", sums[0] / dist.size(),
                    std::sqrt(sums[1] / dist.size()));
        std::printf("images/sec total on %d workers: %.1f +- %.1f\n", dist.size(), sums[0],
                    std::sqrt(sums[1]));
        std::printf("images per CPU-second per worker: %.2f\n", sums[2] / dist.size());
    }
    if (o.print_checksum) {
        // Each rank's batch-norm statistics come from its own data; the trainer averages
        // them at the end of every epoch, and so does this before comparing models.
        dist.average(buffer_tensors(model), "bn/");
        std::printf("rank %d model checksum %016llx\n", dist.rank(),
                    static_cast<unsigned long long>(model_checksum(compute, model)));
    }
    return 0;
}

} // namespace
} // namespace dt::models

int main(int argc, char **argv)
{
    using namespace dt::models;
    BenchOptions o;
    CLI::App app{"disttrain-bench: synthetic data-parallel training benchmark. Start N "
                 "workers with disttrainrun -np N."};
    app.add_option("--model", o.model, "mlp, convnet, resnet20 or resnet50")
        ->capture_default_str()
        ->check(CLI::IsMember(model_names()));
    app.add_option("--batch-size", o.batch_size, "images per worker per step")
        ->capture_default_str()
        ->transform(whole_number_at_least<uint64_t>(1));
    app.add_option("--num-warmup", o.num_warmup, "untimed steps first")
        ->capture_default_str()
        ->transform(whole_number_at_least<int>(0));
    app.add_option("--num-iters", o.num_iters, "timed steps")
        ->capture_default_str()
        ->transform(whole_number_at_least<int>(1));
    app.add_option("--threads", o.threads, "compute threads per worker")
        ->transform(whole_number_at_least<int>(0));
    app.add_flag("--bf16", o.bf16, "matmul and convolution in bfloat16 where the CPU has it");
    app.add_flag("--print-checksum", o.print_checksum,
                 "every rank prints a hash of its final model (equal ranks, equal hashes)");
    app.add_option("--optimizer", o.optimizer, "sgd, momentum, nesterov, adam or adamw")
        ->capture_default_str()
        ->check(CLI::IsMember({"sgd", "momentum", "nesterov", "adam", "adamw"}));
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        std::fprintf(stderr, "disttrain-bench: %s\nRun with --help for the options.\n",
                     e.what());
        return 2;
    }
    try {
        return bench(o);
    } catch (const InputError &e) {
        std::fprintf(stderr, "disttrain-bench: %s\n", e.what());
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "disttrain-bench: error: %s\n", e.what());
        return 1;
    }
}
