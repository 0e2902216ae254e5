// SPDX-License-Identifier: Apache-2.0
#include "train/options.h"

#include "common/error.h"
#include "data/dataset.h"
#include "train/cli_validators.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdio>
#include <sstream>

namespace dt::models {
namespace {

// --milestones: whole numbers separated by commas (or nothing).
std::string check_milestones(std::string &text)
{
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        const std::string err = check_whole_number(item, 0, ~uint64_t{0});
        if (!err.empty())
            return cat("'", text, "' is not a list of epochs like 10,15: each ", err);
    }
    if (!text.empty() && text.back() == ',')
        return cat("'", text, "' is not a list of epochs like 10,15");
    return "";
}

// The shortest text that reads back as v (0.05, not 0.050000000000000003).
std::string shortest(double v)
{
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

} // namespace

SharedSettings shared_settings(const TrainOptions &o, size_t train_images, size_t test_images)
{
    auto yes_no = [](bool b) { return std::string(b ? "given" : "not given"); };
    return {
        {"--model", o.model},
        {"--epochs", std::to_string(o.epochs)},
        {"--batch-size", std::to_string(o.batch_size)},
        {"--lr", shortest(o.lr)},
        {"--base-batch", std::to_string(o.base_batch)},
        {"--warmup-epochs", shortest(o.warmup_epochs)},
        {"--decay", o.decay},
        {"--milestones", o.milestones},
        {"--gamma", shortest(o.gamma)},
        {"--optimizer", o.optimizer},
        {"--momentum", shortest(o.momentum)},
        {"--weight-decay", shortest(o.weight_decay)},
        {"--bf16", yes_no(o.bf16)},
        {"--checkpoint-every", std::to_string(o.checkpoint_every)},
        {"--seed", std::to_string(o.seed)},
        {"--elastic", yes_no(o.elastic)},
        {"--commit-every", std::to_string(o.commit_every)},
        {"training images (--train-limit, --data-dir)", std::to_string(train_images)},
        {"test images (--test-limit, --data-dir)", std::to_string(test_images)},
    };
}

std::string encode_settings(const SharedSettings &s)
{
    std::string out;
    for (const auto &[name, value] : s)
        out += name + '\t' + value + '\n';
    return out;
}

SharedSettings decode_settings(const std::string &text)
{
    SharedSettings out;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const auto tab = line.find('\t');
        if (tab == std::string::npos)
            out.emplace_back(line, "");
        else
            out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
    return out;
}

std::vector<size_t> differing_settings(const SharedSettings &mine, const SharedSettings &theirs)
{
    std::vector<size_t> out;
    for (size_t i = 0; i < theirs.size(); ++i) {
        bool same = false;
        for (const auto &[name, value] : mine)
            if (name == theirs[i].first)
                same = value == theirs[i].second;
        if (!same)
            out.push_back(i);
    }
    return out;
}

TrainParse parse_train_options(int argc, char **argv)
{
    TrainOptions o;
    CLI::App app{"disttrain-train: data-parallel training of a model of the zoo on "
                 "Fashion-MNIST. Start N ranks with disttrainrun -np N."};
    // A flag given twice takes its last value, so wrappers can pass defaults and users
    // override them (scripts/run-main.sh).
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--model", o.model,
                   "mlp, convnet or resnet20 (resnet50 takes only 3x224x224 images)")
        ->check(CLI::IsMember({"mlp", "convnet", "resnet20", "resnet50"}));
    // Every number is checked here, before the job is joined: the unsigned ones as text
    // (CLI11 would wrap -1 to 2^64 - 1), the real ones for their range and finiteness.
    const auto u64 = [](uint64_t min) { return whole_number_at_least<uint64_t>(min); };
    app.add_option("--epochs", o.epochs, "passes over the training set")
        ->capture_default_str()
        ->transform(u64(1));
    app.add_option("--batch-size", o.batch_size, "images per rank per step")
        ->capture_default_str()
        ->transform(u64(1));
    app.add_option("--lr", o.lr, "learning rate for --base-batch images")
        ->capture_default_str()
        ->check(real_number_in({0, false}));
    app.add_option("--base-batch", o.base_batch,
                   "linear scaling rule: lr x global batch / base batch (0: no scaling)")
        ->transform(u64(0));
    app.add_option("--warmup-epochs", o.warmup_epochs,
                   "linear warm-up from lr to the scaled lr (may be fractional)")
        ->check(real_number_in({0, false}));
    app.add_option("--decay", o.decay, "constant, step or cosine")
        ->check(CLI::IsMember({"constant", "step", "cosine"}));
    app.add_option("--milestones", o.milestones, "step decay: epochs, e.g. 10,15")
        ->check(CLI::Validator(check_milestones, ""));
    app.add_option("--gamma", o.gamma, "step decay factor")
        ->capture_default_str()
        ->check(real_number_in({0, true}));
    app.add_option("--optimizer", o.optimizer, "sgd, momentum, nesterov, adam or adamw")
        ->capture_default_str()
        ->check(CLI::IsMember({"sgd", "momentum", "nesterov", "adam", "adamw"}));
    app.add_option("--momentum", o.momentum,
                   "of --optimizer momentum and nesterov (nesterov: greater than 0)")
        ->capture_default_str()
        ->check(real_number_in({0, false, 1, true}));
    app.add_option("--weight-decay", o.weight_decay)
        ->capture_default_str()
        ->check(real_number_in({0, false}));
    app.add_option("--threads", o.threads,
                   "compute threads per rank (default DISTTRAIN_THREADS or all CPUs allowed)")
        ->transform(whole_number_at_least<int>(0));
    app.add_flag("--bf16", o.bf16, "matmul and convolution in bfloat16 where the CPU has it");
    app.add_option("--checkpoint-dir", o.checkpoint_dir,
                   "write checkpoint.dtck here at the end of every epoch")
        ->check(creatable_folder());
    app.add_option("--checkpoint-every", o.checkpoint_every,
                   "also write a checkpoint every N steps (0: none; needs --checkpoint-dir)")
        ->transform(u64(0));
    app.add_flag("--resume", o.resume, "continue from the checkpoint in --checkpoint-dir");
    app.add_option("--seed", o.seed, "weights and shuffling")
        ->capture_default_str()
        ->transform(u64(0));
    app.add_option("--data-dir", o.data_dir,
                   std::string("Fashion-MNIST IDX files (default ") + kFashionMnistDir + ")");
    app.add_option("--metrics-file", o.metrics_file, "one JSON object per epoch (rank 0)");
    app.add_option("--train-limit", o.train_limit, "use the first N training images (0: all)")
        ->transform(u64(0));
    app.add_option("--test-limit", o.test_limit, "use the first N test images (0: all)")
        ->transform(u64(0));
    bool no_progress = false;
    app.add_flag("--no-progress", no_progress, "no progress bar even on a terminal");
    app.add_flag("--quiet", o.quiet, "no table on stdout");
    app.add_flag("--print-checksum", o.print_checksum,
                 "every rank prints a hash of its final model (equal ranks, equal hashes)");
    app.add_flag("--elastic", o.elastic,
                 "under disttrainrun --elastic: a lost rank does not end the job; the others "
                 "go back to the last commit, re-form and go on with the same global batch, "
                 "and replacements (--max-restarts) join at a commit");
    app.add_option("--commit-every", o.commit_every,
                   "elastic: commit the state in memory every N steps (and at each epoch's "
                   "end)")
        ->capture_default_str()
        ->transform(u64(1));
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        app.exit(e);
        return {std::nullopt, 0};
    } catch (const CLI::ParseError &e) {
        std::fprintf(stderr, "disttrain-train: %s\nRun with --help for the options.\n",
                     e.what());
        return {std::nullopt, 2};
    }
    if (o.resume && o.checkpoint_dir.empty()) {
        std::fprintf(stderr, "disttrain-train: --resume needs --checkpoint-dir\n");
        return {std::nullopt, 2};
    }
    // Else the run trained to the end without the checkpoints it was asked for.
    if (o.checkpoint_every > 0 && o.checkpoint_dir.empty()) {
        std::fprintf(stderr, "disttrain-train: --checkpoint-every needs --checkpoint-dir\n");
        return {std::nullopt, 2};
    }
    if (o.optimizer == "nesterov" && o.momentum == 0) {
        std::fprintf(stderr, "disttrain-train: --momentum: must be greater than 0 and below 1 "
                             "with --optimizer nesterov, got 0\nRun with --help for the "
                             "options.\n");
        return {std::nullopt, 2};
    }
    o.progress = !no_progress;
    if (o.data_dir.empty())
        o.data_dir = kFashionMnistDir;
    return {o, 0};
}

} // namespace dt::models
