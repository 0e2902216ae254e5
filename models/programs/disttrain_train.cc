// SPDX-License-Identifier: Apache-2.0
// disttrain-train: data-parallel training of a model of the zoo on Fashion-MNIST.
//
//   disttrainrun -np 2 disttrain-train --model mlp --epochs 20 --batch-size 100
//   disttrainrun -np 4 --elastic --min-np 2 --max-restarts 1 -- disttrain-train --elastic
//
// Exit status: 0 on success, 2 for bad input (flags, data files, checkpoints), 1 for
// any other failure (a lost peer, a compute error).
#include "common/error.h"
#include "data/dataset.h"
#include "nn/compute.h"
#include "train/distributed.h"
#include "train/options.h"
#include "train/trainer.h"
#include "zoo/zoo.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

int main(int argc, char **argv)
{
    using namespace dt::models;
    const TrainParse parsed = parse_train_options(argc, argv);
    if (!parsed.options)
        return parsed.exit_code;
    const TrainOptions &o = *parsed.options;
    try {
        // Everything that can be wrong with the input is checked before joining the job,
        // so every rank fails the same way at once instead of waiting for the others.
        const Dataset train = load_fashion_mnist(o.data_dir, Split::train, o.train_limit);
        const Dataset test = load_fashion_mnist(o.data_dir, Split::test, o.test_limit);
        check_same_image_shape(train, test);
        check_model_input(o.model, InputShape{train.channels, train.height, train.width,
                                              train.classes},
                          train.images_file);
        Compute compute(ComputeOptions{o.threads, o.bf16, ""});
        if (o.elastic) {
            const char *elastic = std::getenv("DISTTRAIN_ELASTIC");
            if (elastic == nullptr || std::string(elastic) != "1")
                throw_input_error("--elastic needs an elastic job: start it with "
                                  "disttrainrun --elastic [--min-np A] [--max-restarts N]");
            if (compute.tensor_memory() != DT_MEMORY_HOST)
                throw_input_error("--elastic commits the state in host memory and needs "
                                  "host tensors; ", compute.describe(), " keeps them on a "
                                  "device: use DISTTRAIN_COMPUTE=onednn or drop --elastic");
        }
        Distributed dist(compute);
        Trainer trainer(o, train, test, compute, dist);
        trainer.run();
        return 0;
    } catch (const ReportedInputError &) {
        return 2;
    } catch (const InputError &e) {
        std::fprintf(stderr, "disttrain-train: %s\n", e.what());
        return 2;
    } catch (const ReportedError &) {
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "disttrain-train: error: %s\n", e.what());
        return 1;
    }
}
