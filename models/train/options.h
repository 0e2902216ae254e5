/* SPDX-License-Identifier: Apache-2.0 */
// The command line of disttrain-train.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dt::models {

struct TrainOptions {
    std::string model = "mlp";
    uint64_t epochs = 20;
    uint64_t batch_size = 100; // per rank
    double lr = 0.05;          // for base_batch images (linear scaling rule)
    uint64_t base_batch = 0;   // 0: the global batch (no scaling)
    double warmup_epochs = 0;
    std::string decay = "constant";
    std::string milestones;    // "10,15": epochs where step decay multiplies by gamma
    double gamma = 0.1;
    std::string optimizer = "momentum";
    double momentum = 0.9;
    double weight_decay = 0;
    int threads = 0;           // 0: DISTTRAIN_THREADS or the affinity mask
    bool bf16 = false;
    std::string checkpoint_dir;
    uint64_t checkpoint_every = 0; // steps; 0: only at the end of each epoch
    bool resume = false;
    uint64_t seed = 1;
    std::string data_dir;      // "": /usr/share/datasets/fashion-mnist
    std::string metrics_file;
    uint64_t train_limit = 0;  // use only the first N training samples (0: all)
    uint64_t test_limit = 0;
    bool progress = true;
    bool print_checksum = false; // every rank prints model_checksum() at the end
    bool quiet = false;        // no table (tests read the metrics file)
    bool elastic = false;      // survive lost ranks, let replacements in (disttrainrun --elastic)
    // Elastic: steps between in-memory commits of the state. Each costs two small
    // collectives (metric sums, the joiners' poll) and a copy of the state: 4-10 ms for
    // the mlp on 4 ranks sharing 2 cores, 15% of the run at every step, 2% at every 10,
    // which a loss pays back with at most 10 steps done again (models/README.md).
    uint64_t commit_every = 10;
};

struct TrainParse {
    std::optional<TrainOptions> options;
    int exit_code = 0; // when options is empty: 0 after --help, 2 after bad input
};

TrainParse parse_train_options(int argc, char **argv);

// What every rank of a job must agree on, as (name, value) in a fixed order: the options
// that decide what a step computes (a rank started with another --lr or --optimizer makes
// the same collective calls as the others, so no call check notices, and trains another
// model under the same name), and the sizes of the data it loaded.
using SharedSettings = std::vector<std::pair<std::string, std::string>>;
SharedSettings shared_settings(const TrainOptions &o, size_t train_images, size_t test_images);

// One line per setting, "name\tvalue", for the exchange between ranks; and back.
std::string encode_settings(const SharedSettings &s);
SharedSettings decode_settings(const std::string &text);

// The indices of theirs (rank 0's) whose value mine lacks or holds otherwise.
std::vector<size_t> differing_settings(const SharedSettings &mine,
                                       const SharedSettings &theirs);

} // namespace dt::models
