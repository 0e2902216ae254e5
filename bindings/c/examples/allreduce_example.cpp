// SPDX-License-Identifier: Apache-2.0
// Allreduce from C++ through disttrain.hpp: RAII context and requests, typed
// collectives, errors as exceptions.
//
//     disttrainrun -np 2 ./allreduce_example_cpp
//
// Each rank contributes rank + i at index i. A blocking average and an asynchronous sum
// are checked against the values every rank must hold.
#include <disttrain/disttrain.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main()
{
    try {
        disttrain::context ctx; // rank, size, store and transport from the environment
        const int rank = ctx.rank(), size = ctx.size();
        bool ok = true;

        std::vector<double> avg(8);
        for (size_t i = 0; i < avg.size(); ++i)
            avg[i] = rank + static_cast<double>(i);
        ctx.allreduce(avg, disttrain::reduce_op::avg, "example.avg");
        for (size_t i = 0; i < avg.size(); ++i)
            ok = ok && avg[i] == (size - 1) / 2.0 + static_cast<double>(i);

        std::vector<std::int64_t> in(8), out(8);
        for (size_t i = 0; i < in.size(); ++i)
            in[i] = rank + static_cast<std::int64_t>(i);
        disttrain::request req = ctx.allreduce_async(in.data(), out.data(), in.size(),
                                                     disttrain::reduce_op::sum, "example.sum");
        req.wait();
        for (size_t i = 0; i < out.size(); ++i)
            ok = ok && out[i] == std::int64_t(size) * (size - 1) / 2 +
                                     std::int64_t(size) * static_cast<std::int64_t>(i);

        std::printf("rank %d of %d (transport %s): avg[1] = %g, sum[1] = %lld\n", rank, size,
                    ctx.transport().c_str(), avg[1], static_cast<long long>(out[1]));
        std::printf("allreduce_example_cpp: %s\n", ok ? "OK" : "WRONG RESULT");
        return ok ? 0 : 1;
    } catch (const disttrain::error &e) {
        std::fprintf(stderr, "allreduce_example_cpp: %s\n", e.what());
        return 1;
    }
}
